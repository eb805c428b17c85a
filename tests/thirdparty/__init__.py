"""Third-party web apps, installed from PyPI and served offline, for tests and benchmarks to explore.

Each app runs in its own subprocess, so that its framework's global state (Django's settings) never enters
the caller's process. Today: Django's admin (`serve_django_admin`, `django_admin_site`); see README.md.
"""

from __future__ import annotations

import atexit
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from explorer.config import DEFAULT_FORBID, LoginStep, Policy, SiteConfig
from tests.thirdparty.django_admin import ADMIN_PASSWORD, ADMIN_USERNAME, PASSWORD_ENV

REPO_ROOT = Path(__file__).resolve().parents[2]

# What the explorer must never actuate in the admin, on top of DEFAULT_FORBID (which already covers "Log out",
# "Delete" links and /delete/ hrefs). Matched case-insensitively against an element's name, a button's value
# and a link's href (explorer.safety.forbidden_reason); a submit input's name is its value.
DJANGO_ADMIN_FORBID = (
    r"^\s*save\s*$",  # the change form's default submit
    r"^\s*save\s+(and\s+(add\s+another|continue\s+editing|view)|as\s+new)\s*$",
    r"\byes,?\s*i\W?m\s+sure\b",  # confirms a deletion ("Yes, I’m sure")
    r"\b(change|reset|set)\s+(my\s+)?password\b",
    r"/password(_change)?/",  # /admin/password_change/ and a user's /password/ form
    # related-object popups ("Add another site"): the explorer follows a popup in its main tab, where the
    # popup's page (no header, no breadcrumbs) has no way out but its forbidden Save
    r"[?&]_popup=1\b",
)
# Controls whose effect the admin keeps in the browser's localStorage/sessionStorage (the colour theme, the
# collapsed sidebar, the sidebar filter): a site reset cannot undo them (BrowserSession.reset clears cookies
# only), so after one click every later page would look different. Pass your own policy to allow them.
DJANGO_ADMIN_STICKY = (
    r"\btoggle\s+(theme|navigation)\b",
    r"^\s*filter navigation items\s*$",
    r"^\s*by\s+[\w ]+$",  # a changelist filter's <details> summary ("By groups"): its open state is kept too
)


class ThirdPartyServer:
    """A third-party app served by a subprocess: `.url` (ends in '/'), `.stop()`, usable as a context manager."""

    def __init__(self, process: subprocess.Popen, url: str, log_path: Path):
        self.process = process
        self.url = url
        self.log_path = log_path

    def stop(self) -> None:
        """Stop the subprocess (SIGTERM, then SIGKILL after 10 s); it removes its temp dir. Idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process.stdout:
            self.process.stdout.close()
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> ThirdPartyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ThirdPartyServer({self.url!r}, pid={self.process.pid})"


def serve_django_admin(port: int = 0, *, timeout: float = 60.0) -> ThirdPartyServer:
    """Start Django's admin demo in a subprocess and wait until it answers; port 0 picks a free port.

    Every server has its own fresh SQLite database, migrated and seeded deterministically (superuser
    `admin`, six users, three groups, six flatpages, four redirects); POST or GET `<url>__reset` restores it.
    Raises RuntimeError (with the server's stderr) if it does not come up within `timeout` seconds.
    """
    log = tempfile.NamedTemporaryFile(prefix="scalehop-django-admin-", suffix=".log", delete=False)
    cmd = [sys.executable, "-m", "tests.thirdparty.django_admin", "--port", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True
    )
    log.close()
    server = ThirdPartyServer(process, "", Path(log.name))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        line = lines.get(timeout=timeout)
        if not line.startswith("serving http"):
            raise RuntimeError(f"unexpected first line {line!r}")
        server.url = line.split()[1].rstrip("/") + "/"
        _wait_answers(server.url + "admin/login/", deadline)
    except (queue.Empty, RuntimeError, TimeoutError) as exc:
        stderr = Path(log.name).read_text(errors="replace")[-3000:]
        server.stop()
        raise RuntimeError(f"Django admin server did not start ({exc or 'no URL line'}):\n{stderr}") from None
    atexit.register(server.stop)
    return server


def django_admin_site(url: str, **overrides: object) -> SiteConfig:
    """The SiteConfig to explore the Django admin served at `url` (overrides replace any field).

    Start URL `<url>admin/`, reset URL `<url>__reset`, login steps that sign in as the seeded superuser with
    the password from ${SCALEHOP_DJANGO_PASSWORD} (defaulted here to the seeded one), and a policy that keeps
    DEFAULT_FORBID and adds DJANGO_ADMIN_FORBID (no logging out, no password change, no deleting, no saving)
    and DJANGO_ADMIN_STICKY (no UI settings that outlive a reset in the browser's storage).
    """
    os.environ.setdefault(PASSWORD_ENV, ADMIN_PASSWORD)
    base = url.rstrip("/") + "/"
    fields: dict[str, object] = {
        "name": "django-admin",
        "start_url": base + "admin/",
        "reset_url": base + "__reset",
        "login": [
            LoginStep(action="goto", url=base + "admin/login/?next=/admin/"),
            LoginStep(action="fill", selector="#id_username", value=ADMIN_USERNAME),
            LoginStep(action="fill", selector="#id_password", value="${" + PASSWORD_ENV + "}"),
            LoginStep(action="click", selector="#login-form [type=submit]"),
        ],
        "policy": Policy(forbid=[*DEFAULT_FORBID, *DJANGO_ADMIN_FORBID, *DJANGO_ADMIN_STICKY]),
        # a change page's copy of the changelist filters only feeds its redirect after a save: same state
        "ignore_params": ["_changelist_filters"],
    }
    fields.update(overrides)
    return SiteConfig(**fields)


def _drain(stream, lines: queue.Queue[str]) -> None:
    """Read the subprocess's stdout to its end (so that it never blocks on a full pipe)."""
    try:
        for line in stream:
            lines.put(line.strip())
    except (OSError, ValueError):
        pass


def _wait_answers(url: str, deadline: float) -> None:
    """Poll `url` until it answers with a 2xx/3xx, or raise TimeoutError at `deadline`."""
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status < 400:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer: {last}")


__all__ = ["DJANGO_ADMIN_FORBID", "DJANGO_ADMIN_STICKY", "ThirdPartyServer", "django_admin_site", "serve_django_admin"]
