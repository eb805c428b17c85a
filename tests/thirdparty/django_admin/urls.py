"""URLs: the admin at admin/, admindocs at admin/doc/, and /__reset; flatpages and redirects are served by
their fallback middleware (a flatpage's URL is its own path, e.g. /about/)."""

from __future__ import annotations

import sqlite3

from django.conf import settings
from django.contrib import admin
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods


@csrf_exempt
@require_http_methods(["GET", "POST"])
def reset(request: HttpRequest) -> HttpResponse:
    """Restore the pristine seeded database. Sessions live in it, so every visitor is logged out too."""
    connections.close_all()
    restore_pristine()
    return HttpResponse("reset\n", content_type="text/plain")


def restore_pristine() -> None:
    """Copy the pristine database over the live one with SQLite's backup API (safe under other connections)."""
    source = sqlite3.connect(settings.PRISTINE_DB)
    target = sqlite3.connect(settings.DATABASES["default"]["NAME"], timeout=20)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


admin.site.site_url = "/"

urlpatterns = [
    path("admin/doc/", include("django.contrib.admindocs.urls")),
    path("admin/", admin.site.urls),
    path("__reset", reset),
]
