"""Safety rules: which URLs are in a site's scope, and which elements its policy forbids."""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urlsplit

from explorer.config import Policy, origin_of
from explorer.records import Element

# Schemes that never reach the network; always allowed.
_LOCAL_SCHEMES = ("data", "blob", "about", "javascript")


def in_scope(url: str, allowed_origins: list[str]) -> bool:
    """True when `url` belongs to one of the allowed origins (entries may use a `*.` host wildcard)."""
    scheme = urlsplit(url).scheme
    if scheme in _LOCAL_SCHEMES:
        return True
    if scheme == "chrome-error":  # Chromium's own error page after a failed navigation
        return True
    origin = origin_of(url)
    return any(_origin_matches(origin, allowed) for allowed in allowed_origins)


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def canonical_origin(origin: str) -> str:
    """scheme://host:port with the default port written out and every loopback name (localhost, 127.0.0.0/8,
    ::1) as `loopback`: the aliases of one local server compare equal, other ports and hosts do not."""
    parts = urlsplit(origin)
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a malformed port: compare as written, which matches nothing allowed
        return origin.lower()
    host = (parts.hostname or "").lower()
    if parts.username is not None or parts.password is not None:
        return origin.lower()  # user@host: never canonical, never equal to an allowed origin
    return f"{parts.scheme}://{'loopback' if _is_loopback(host) else host}:{port}"


def _origin_matches(origin: str, allowed: str) -> bool:
    allowed = allowed.rstrip("/").lower()
    if allowed == origin or (allowed == "file:" and origin == "file://"):
        return True
    if "*." not in allowed and "://" in origin and canonical_origin(origin) == canonical_origin(allowed):
        return True
    if "*." in allowed:
        scheme, _, host = allowed.partition("://*.")
        o_scheme, _, o_host = origin.partition("://")
        return o_scheme == scheme and (o_host == host or o_host.endswith("." + host))
    return False


def allowed_hosts(allowed_origins: list[str]) -> list[str]:
    """Host names (no ports) of the allowed origins, for a DNS-level guard; a loopback origin brings its aliases."""
    hosts = []
    for origin in allowed_origins:
        host = urlsplit(origin.replace("*.", "")).hostname
        aliases = (host, "localhost") if host and _is_loopback(host) else (host,)  # IP literals never resolve
        hosts += [h for h in aliases if h and h not in hosts]
    return hosts


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE) for p in patterns]


def forbidden_reason(element: Element, policy: Policy) -> str | None:
    """The policy pattern that `element` matches, or None if it may be used. Matched: its name, a button's value,
    and where using it leads: a link's href, a submitting control's form target (formaction, else the form's
    action), so that a neutral "Continue" posting to /delete is forbidden like a "Delete" button."""
    fields = [element.name, element.value if element.role == "button" else "", element.href or "", element.target or ""]
    for pattern in _compiled(tuple(policy.forbid)):
        if any(f and pattern.search(f) for f in fields):
            return pattern.pattern
    return None


def forbidden_request(url: str, method: str, main_navigation: bool, policy: Policy) -> str | None:
    """The policy pattern that a request's path and query match, for the requests that act: a main-frame
    navigation or any non-GET. This stops what no element showed, e.g. a script's `fetch('/unsubscribe',
    {method: 'POST'})` or a location assigned in an event handler. Assets and GET fetches are never refused."""
    if method.upper() in ("GET", "HEAD", "OPTIONS") and not main_navigation:
        return None
    parts = urlsplit(url)
    where = parts.path + ("?" + parts.query if parts.query else "")
    for pattern in _compiled(tuple(policy.forbid)):
        if pattern.search(where):
            return pattern.pattern
    return None


def destination(element: Element) -> str | None:
    """Where using `element` navigates, when the page says: a link's href or a submitting control's form target."""
    return element.href or element.target
