"""The scope guard and the policy against a small test app in real Chromium: what a click leads to decides, not
only its label. The app (a threaded http.server, written here) counts every request it answers, so a refused
action is checked on the server's side too."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from explorer.browser import Chromium
from explorer.config import BrowserConfig, SiteConfig, Timeouts
from explorer.records import Action

PAGES = {
    "/": """<html><head><title>Guarded</title></head><body><h1>Your account</h1>
<form action="/account/delete" method="post"><button>Continue</button></form>
<form action="/checkout" method="post"><button formaction="/pay" formmethod="post">Next</button></form>
<form action="http://partner.example.net/collect" method="post"><button>Send</button></form>
<form action="/search" method="get"><input name="q" aria-label="Query"><button>Search</button></form>
<a href="/away">Deals</a> <a href="/live">Live</a>
</body></html>""",
    "/live": """<html><head><title>Live</title></head><body><h1>Live</h1><script>
new WebSocket("ws://127.0.0.1:{other}/feed"); new EventSource("http://127.0.0.1:{other}/events");
</script></body></html>""",
    "/search": "<html><head><title>Results</title></head><body><h1>Results</h1></body></html>",
}


class _App(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []
    other = 0  # the port of another origin: `/away` redirects there (an IP literal, which no DNS rule stops)

    def _answer(self) -> None:
        self.seen.append((self.command, self.path))
        if self.path == "/away":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{self.other}/landing")
            self.end_headers()
            return
        body = PAGES.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write((body or "<h1>gone</h1>").replace("{other}", str(self.other)).encode())

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


class _Other(_App):
    seen: list[tuple[str, str]] = []


@pytest.fixture(scope="module")
def app():
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for handler in (_App, _Other)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    _App.other = servers[1].server_port
    yield f"http://127.0.0.1:{servers[0].server_port}"
    for server in servers:
        server.shutdown()


@pytest.fixture
async def session(app):
    site = SiteConfig(name="guarded", start_url=app + "/", timeouts=Timeouts(navigation_ms=5000, action_ms=3000))
    chromium = await Chromium.launch(BrowserConfig(), site.allowed_origins)
    session = await chromium.new_session(site)
    await session.start()
    yield session
    await session.close()
    await chromium.close()


def _named(obs, name):
    return next(e for e in obs.elements if e.name == name)


async def test_a_neutral_button_that_posts_to_a_forbidden_target_is_refused(session):
    """The "Continue" button matches no pattern by its label; its form posts to /account/delete: forbidden."""
    obs = await session.observe()
    cont = _named(obs, "Continue")
    assert cont.target.endswith("/account/delete") and cont.method == "POST"
    _App.seen.clear()
    outcome = await session.act(Action.on(cont), obs)
    assert not outcome.ok and "policy forbids" in outcome.error and "/account/delete" in outcome.error
    assert outcome.events[0].kind == "refused"
    nxt = _named(obs, "Next")  # the button's own formaction (/pay) wins over its form's /checkout
    assert nxt.target.endswith("/pay")
    outcome = await session.act(Action.on(nxt), obs)
    assert not outcome.ok and "policy forbids" in outcome.error
    assert not [p for m, p in _App.seen if m == "POST"]  # nothing reached the server


async def test_a_form_posting_to_another_origin_is_refused_and_a_plain_one_works(session):
    obs = await session.observe()
    refused = session.refused_navigations
    outcome = await session.act(Action.on(_named(obs, "Send")), obs)
    assert not outcome.ok and "out of scope" in outcome.error
    assert session.refused_navigations == refused + 1
    outcome = await session.act(Action.on(_named(obs, "Search")), obs)  # a GET form to this origin: allowed
    assert outcome.ok and "/search" in session.page.url


async def test_a_server_redirect_out_of_scope_is_counted_and_left(session, app):
    """route() never sees a redirect's request: the Location is checked on the response, and the page it reached
    (127.0.0.1 on another port: no host-resolver rule applies to an IP literal) is left at once."""
    obs = await session.observe()
    blocked, refused = session.blocked_requests, session.refused_navigations
    outcome = await session.act(Action.on(_named(obs, "Deals")), obs)
    assert not outcome.ok and "out of scope" in outcome.error
    assert session.blocked_requests == blocked + 1 and session.refused_navigations == refused + 1
    assert any(e.kind == "blocked_request" and e.url.endswith("/landing") for e in outcome.events)
    assert session.page.url == app + "/" and outcome.url_after == app + "/"


async def test_websockets_and_event_streams_to_another_origin_are_refused(session):
    obs = await session.observe()
    blocked = session.blocked_requests
    _Other.seen.clear()
    outcome = await session.act(Action.on(_named(obs, "Live")), obs)
    await session.page.wait_for_timeout(500)
    urls = [e.url for e in session.events if e.kind == "blocked_request"]
    assert any(u.startswith("ws://") and u.endswith("/feed") for u in urls), urls
    assert any(u.endswith("/events") for u in urls), urls
    assert session.blocked_requests >= blocked + 2 and outcome.ok
    assert not _Other.seen  # neither reached the other server
