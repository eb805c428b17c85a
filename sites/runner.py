"""Start and stop the demo sites, one ThreadingHTTPServer per site, each in a daemon thread."""

from __future__ import annotations

import socket
import threading
from http.server import ThreadingHTTPServer

from sites.classifieds import ClassifiedsSite
from sites.forum import ForumSite
from sites.server import Handler, Site
from sites.shop import ShopSite

SITE_NAMES = ("shop", "forum", "classifieds")
_CLASSES = {"shop": ShopSite, "forum": ForumSite, "classifieds": ClassifiedsSite}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, addr: tuple[str, int], site: Site):
        self.site = site
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, Handler)


class SiteServers:
    """Running demo sites: `.urls` maps site name to base URL; `.stop()` shuts them all down."""

    def __init__(self, servers: dict[str, _Server], threads: list[threading.Thread]):
        self._servers = servers
        self._threads = threads
        self._stopped = False
        self.sites: dict[str, Site] = {name: s.site for name, s in servers.items()}
        self.urls: dict[str, str] = {}
        for name, srv in servers.items():
            host, port = srv.server_address[:2]
            self.urls[name] = f"http://{_url_host(host)}:{port}/"

    def stop(self) -> None:
        """Shut down and close every server (slow requests in flight are released). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        for srv in self._servers.values():
            srv.site.stopping.set()
        for srv in self._servers.values():
            srv.shutdown()
            srv.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def serve_forever(self) -> None:
        """Block until KeyboardInterrupt, then stop."""
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> SiteServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_sites(host: str = "127.0.0.1", port: int = 8700, seed: int = 0, slow_seconds: float = 30.0) -> SiteServers:
    """Start shop on `port`, forum on `port+1`, classifieds on `port+2` (port 0: ephemeral ports each)."""
    servers: dict[str, _Server] = {}
    try:
        for offset, name in enumerate(SITE_NAMES):
            site = _CLASSES[name](seed=seed, slow_seconds=slow_seconds)
            servers[name] = _Server((host, port + offset if port else 0), site)
    except BaseException:
        for srv in servers.values():
            srv.server_close()
        raise
    threads = []
    for name, srv in servers.items():
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, name=f"site-{name}", daemon=True)
        t.start()
        threads.append(t)
    return SiteServers(servers, threads)


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if ":" in host:
        return f"[{host}]"
    return host
