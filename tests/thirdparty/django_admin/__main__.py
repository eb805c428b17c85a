"""Serve the Django admin demo: `python -m tests.thirdparty.django_admin --port 8800`.

Migrates and seeds a fresh SQLite file in a temp dir, keeps a pristine copy for /__reset, then serves with a
threaded wsgiref server on 127.0.0.1. Prints exactly one stdout line, `serving http://HOST:PORT/`, once it
accepts requests; SIGTERM or Ctrl-C stops it and removes the temp dir.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from tests.thirdparty.django_admin import SETTINGS_MODULE


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """wsgiref's server, one thread per request."""

    daemon_threads = True
    allow_reuse_address = True


class QuietHandler(WSGIRequestHandler):
    """No per-request log lines."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def main(argv: list[str] | None = None) -> int:
    """Parse the options, prepare the database, serve until stopped."""
    parser = argparse.ArgumentParser(prog="python -m tests.thirdparty.django_admin", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8800, help="0 picks a free port")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="scalehop-django-admin-"))
    os.environ["SCALEHOP_DJANGO_DB"] = str(tmp / "db.sqlite3")
    os.environ["SCALEHOP_DJANGO_PRISTINE"] = str(tmp / "pristine.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server = ThreadingWSGIServer((args.host, args.port), QuietHandler)  # bound now: the port is known
        port = server.server_address[1]
        server.set_app(prepare(f"{args.host}:{port}"))
        print(f"serving http://{args.host}:{port}/", flush=True)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def prepare(domain: str):
    """Migrate and seed the live database, save the pristine copy, and return the WSGI app (static included)."""
    import django
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from django.db import connections

    from tests.thirdparty.django_admin.seed import seed

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    seed(domain)
    connections.close_all()
    shutil.copyfile(os.environ["SCALEHOP_DJANGO_DB"], os.environ["SCALEHOP_DJANGO_PRISTINE"])
    return StaticFilesHandler(get_wsgi_application())


if __name__ == "__main__":
    sys.exit(main())
