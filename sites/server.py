"""A tiny web layer over http.server: requests, responses, routing, sessions and templates."""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import cookies as _cookies
from http.server import BaseHTTPRequestHandler
from importlib import resources
from pathlib import PurePosixPath
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2

_MAX_BODY = 1 << 20
_SID_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
_STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("sites", "templates"),  # package data, through the package's importlib loader
    autoescape=jinja2.select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass
class Request:
    """One parsed HTTP request."""

    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    form: dict[str, list[str]] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    sid: str = ""
    session: dict = field(default_factory=dict)

    def arg(self, name: str, default: str = "") -> str:
        """First value of query parameter `name`."""
        return self.query.get(name, [default])[0]

    def value(self, name: str, default: str = "") -> str:
        """First value of form field `name`."""
        return self.form.get(name, [default])[0]

    def with_query(self, **changes: object) -> str:
        """This path with some query parameters changed (None or "" removes one)."""
        q = {k: v[0] for k, v in self.query.items()}
        for k, v in changes.items():
            if v is None or v == "":
                q.pop(k, None)
            else:
                q[k] = str(v)
        return self.path + ("?" + urlencode(q) if q else "")

    @property
    def full_path(self) -> str:
        """Path plus query string, as the client asked for it."""
        q = urlencode([(k, v) for k, vs in self.query.items() for v in vs])
        return self.path + ("?" + q if q else "")


@dataclass
class Response:
    """An HTTP response to send back."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


def redirect(location: str, status: int = 303) -> Response:
    """A redirect to `location`."""
    return Response(b"", status, "text/plain; charset=utf-8", [("Location", location)])


def json_response(obj: object, status: int = 200) -> Response:
    """A JSON response."""
    return Response(json.dumps(obj).encode(), status, "application/json")


def int_arg(text: str, default: int, lo: int = 1, hi: int = 10**6) -> int:
    """Parse an int, falling back to `default` and clamping into [lo, hi]."""
    try:
        return max(lo, min(hi, int(text)))
    except (TypeError, ValueError):
        return default


def paginate(items: list, page: int, per_page: int) -> tuple[list, int, int]:
    """Slice `items` for `page` (clamped); returns (slice, page, page_count)."""
    pages = max(1, -(-len(items) // per_page))
    page = max(1, min(page, pages))
    return items[(page - 1) * per_page : page * per_page], page, pages


def safe_next(target: str, default: str = "/") -> str:
    """A local redirect target, or `default` when `target` could leave the site."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return default


class Site:
    """Base class for one demo site: routes, per-visitor sessions, shared state and rendering."""

    name = "site"
    title = "Site"

    def __init__(self, seed: int = 0, slow_seconds: float = 30.0):
        self.seed = seed
        self.slow_seconds = slow_seconds
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self._sessions: dict[str, dict] = {}
        self._routes: list[tuple[tuple[str, ...], re.Pattern[str], Callable]] = []
        self.setup_routes()
        self.reset()

    # -- to override -------------------------------------------------------------------------
    def setup_routes(self) -> None:
        """Register this site's routes with `self.route`."""

    def reset_state(self) -> None:
        """Restore the site's shared state to the seeded initial one."""

    def new_session(self) -> dict:
        """Initial per-visitor state."""
        return {}

    def context(self, req: Request) -> dict:
        """Extra template variables for every page of this site."""
        return {}

    # -- machinery ---------------------------------------------------------------------------
    def route(self, pattern: str, handler: Callable, methods: tuple[str, ...] = ("GET",)) -> None:
        """Map `methods` on the path regex `pattern` (full match, named groups) to `handler`."""
        self._routes.append((methods, re.compile(pattern + r"\Z"), handler))

    def reset(self) -> None:
        """Drop every session and restore the seeded state."""
        with self.lock:
            self._sessions.clear()
            self.reset_state()

    def render(self, req: Request, template: str, status: int = 200, **ctx) -> Response:
        """Render `templates/<template>` with the site's common context."""
        flash = req.session.pop("flash", None) if req.session else None
        base = {
            "site": self,
            "req": req,
            "session": req.session,
            "path": req.path,
            "layout": f"{self.name}/layout.html",
            "flash": flash,
        }
        base.update(self.context(req))
        base.update(ctx)
        html = _ENV.get_template(template).render(**base)
        return Response(html.encode("utf-8"), status)

    def not_found(self, req: Request, message: str = "We couldn't find that page.") -> Response:
        """A styled 404 page."""
        return self.render(req, "error.html", 404, code=404, heading="Page not found", message=message)

    def dispatch(self, req: Request) -> Response:
        """Answer one request (never raises)."""
        try:
            return self._dispatch(req)
        except Exception as exc:  # noqa: BLE001 - a demo server must keep answering
            try:
                return self.render(
                    req,
                    "error.html",
                    500,
                    code=500,
                    heading="Something went wrong",
                    message=f"Internal error ({type(exc).__name__}).",
                )
            except Exception:  # noqa: BLE001
                return Response(b"Internal error", 500, "text/plain; charset=utf-8")

    def _dispatch(self, req: Request) -> Response:
        if req.path == "/__health":
            return json_response({"ok": True})
        if req.path == "/__reset" and req.method in ("GET", "POST"):
            self.reset()
            return json_response({"ok": True, "site": self.name})
        if req.path.startswith("/static/"):
            return _static(req.path[len("/static/") :])
        if req.path == "/favicon.ico":
            return _static("favicon.svg")
        new_cookie = self._attach_session(req)
        resp = self._route(req)
        if new_cookie:
            resp.headers.append(("Set-Cookie", f"sid={req.sid}; Path=/; HttpOnly; SameSite=Lax"))
        return resp

    def _attach_session(self, req: Request) -> bool:
        sid = req.cookies.get("sid", "")
        minted = not _SID_RE.match(sid)
        if minted:
            sid = secrets.token_urlsafe(12)
        with self.lock:
            session = self._sessions.get(sid)
            if session is None:
                session = self._sessions[sid] = self.new_session()
        req.sid, req.session = sid, session
        return minted

    def _route(self, req: Request) -> Response:
        path_matched = False
        for methods, pattern, handler in self._routes:
            m = pattern.match(req.path)
            if not m:
                continue
            path_matched = True
            if req.method in methods or (req.method == "HEAD" and "GET" in methods):
                req.params = m.groupdict()
                return handler(req)
        if path_matched:
            resp = self.render(
                req,
                "error.html",
                405,
                code=405,
                heading="Method not allowed",
                message="This page can't be used that way.",
            )
            return resp
        return self.not_found(req)


def _static(name: str) -> Response:
    files = {p.name: p for p in (resources.files("sites") / "static").iterdir() if p.is_file()}  # only these
    file = files.get(name)
    if file is None:
        return Response(b"Not found", 404, "text/plain; charset=utf-8")
    ctype = _STATIC_TYPES.get(PurePosixPath(name).suffix, "application/octet-stream")
    return Response(file.read_bytes(), 200, ctype, [("Cache-Control", "max-age=3600")])


class Handler(BaseHTTPRequestHandler):
    """Turns http.server requests into `Request`s for `self.server.site`."""

    server_version = "scalehop-sites/1.0"
    timeout = 60  # drop connections that stall mid-request
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle("HEAD")

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass

    def _handle(self, method: str) -> None:
        site: Site = self.server.site  # type: ignore[attr-defined]
        try:
            req = self._parse(method)
        except ValueError:
            req = None
        resp = site.dispatch(req) if req else Response(b"Bad request", 400, "text/plain; charset=utf-8")
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(resp.body)))
            if resp.content_type.startswith("text/html"):
                self.send_header("Cache-Control", "no-store")
            for k, v in resp.headers:
                self.send_header(k, v)
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(resp.body)
        except (ConnectionError, OSError):
            pass

    def _parse(self, method: str) -> Request:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        form: dict[str, list[str]] = {}
        if method == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0 or length > _MAX_BODY:
                raise ValueError("bad body length")
            raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            if "application/x-www-form-urlencoded" in (self.headers.get("Content-Type") or "") or raw:
                form = parse_qs(raw, keep_blank_values=True)
        jar = _cookies.SimpleCookie()
        try:
            jar.load(self.headers.get("Cookie") or "")
        except _cookies.CookieError:
            pass
        return Request(method, parts.path or "/", query, form, {k: m.value for k, m in jar.items()})
