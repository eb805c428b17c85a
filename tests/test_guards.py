"""The scope guard and the policy against a small test app in real Chromium: what a click leads to decides, not
only its label. The app (a threaded http.server, written here) counts every request it answers, so a refused
action is checked on the server's side too."""

from __future__ import annotations

import io
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
<button onclick="location.href='/account/delete?all=1'">Proceed</button> <button id="tidy">Tidy up</button>
<button onclick="if (confirm('Delete all your data?')) location.href='/wipe'">Clear</button>
<a href="http://localhost:{port}/search?q=alias">Same site</a> <a href="http://localhost:{other}/landing">Partner</a>
<script>document.getElementById('tidy').onclick = () => fetch('/api/unsubscribe', {method: 'POST'});</script>
</body></html>""",
    "/live": """<html><head><title>Live</title></head><body><h1>Live</h1><script>
new WebSocket("ws://127.0.0.1:{other}/feed"); new EventSource("http://127.0.0.1:{other}/events");
</script></body></html>""",
    "/login": """<html><head><title>Log in</title></head><body><h1>Log in</h1>
<input type="password" aria-label="Password" style="width:300px;height:40px;font-size:30px">
<p class="api-key" style="font-size:30px">Your key: tok-9f3kq2zx</p></body></html>""",
    "/search": "<html><head><title>Results</title></head><body><h1>Results</h1></body></html>",
}


class _App(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []
    other = 0  # the port of another origin: `/away` redirects there (an IP literal, which no DNS rule stops)
    port = 0  # this server's own port

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
        body = (body or "<h1>gone</h1>").replace("{other}", str(self.other)).replace("{port}", str(self.port))
        self.wfile.write(body.encode())

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
    _App.other, _App.port = servers[1].server_port, servers[0].server_port
    yield f"http://127.0.0.1:{servers[0].server_port}"
    for server in servers:
        server.shutdown()


@pytest.fixture
async def session(app):
    timeouts = Timeouts(navigation_ms=5000, action_ms=3000)
    site = SiteConfig(name="guarded", start_url=app + "/", timeouts=timeouts, mask=[".api-key"])
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


async def test_a_script_assigned_destination_is_read_and_refused_by_its_target(session):
    """ "Proceed" sets location.href='/account/delete?all=1' in its onclick: the page exposes it, so it is the
    element's target and the policy refuses the click before anything is sent."""
    obs = await session.observe()
    proceed = _named(obs, "Proceed")
    assert proceed.target.endswith("/account/delete?all=1") and proceed.method == "GET"
    _App.seen.clear()
    outcome = await session.act(Action.on(proceed), obs)
    assert not outcome.ok and "policy forbids" in outcome.error and outcome.events[0].kind == "refused"
    assert not [p for _, p in _App.seen if "delete" in p]


async def test_a_hidden_script_request_to_a_forbidden_path_never_reaches_the_server(session):
    """ "Tidy up" gets its handler from a script (nothing in its markup): the click runs, and the POST it makes to
    /api/unsubscribe is stopped by the network guard and counted as a blocked request."""
    obs = await session.observe()
    blocked = session.blocked_requests
    _App.seen.clear()
    await session.act(Action.on(_named(obs, "Tidy up")), obs)
    await session.page.wait_for_timeout(300)
    assert ("POST", "/api/unsubscribe") not in _App.seen
    assert session.blocked_requests == blocked + 1
    assert any(e.kind == "blocked_request" and "policy forbids POST" in e.detail for e in session.events)


async def test_a_destructive_confirmation_dialog_is_dismissed_by_default(session):
    obs = await session.observe()
    _App.seen.clear()
    outcome = await session.act(Action.on(_named(obs, "Clear")), obs)
    assert outcome.dialogs == ["Delete all your data?"]
    await session.page.wait_for_timeout(300)
    assert ("GET", "/wipe") not in _App.seen and "/wipe" not in session.page.url


async def test_localhost_aliases_are_the_same_site_on_the_same_port_only(session, app):
    """The site is served at 127.0.0.1: a link to localhost on its port is the same origin (followed); localhost on
    another port is another origin (refused before the click)."""
    obs = await session.observe()
    outcome = await session.act(Action.on(_named(obs, "Same site")), obs)
    assert outcome.ok and session.page.url.startswith("http://localhost:") and "q=alias" in session.page.url
    await session.page.goto(app + "/")
    obs = await session.observe()
    _Other.seen.clear()
    outcome = await session.act(Action.on(_named(obs, "Partner")), obs)
    assert not outcome.ok and "out of scope" in outcome.error and not _Other.seen


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


def _region(png: bytes, bbox) -> set:
    from PIL import Image

    x, y, w, h = (round(v) for v in bbox)
    crop = Image.open(io.BytesIO(png)).convert("RGB").crop((x + 2, y + 2, x + w - 2, y + h - 2))
    return {crop.getpixel((i, j)) for i in range(crop.width) for j in range(crop.height)}


async def test_password_fields_and_configured_elements_are_masked_in_screenshots(session, app):
    """A typed password and an element the config names (`.api-key`) are one flat colour in the screenshot and
    in the Set-of-Mark overlay; the heading beside them is not."""
    await session.act(Action(kind="goto", url=app + "/login"))
    obs = await session.observe()
    password = _named(obs, "Password")
    outcome = await session.act(Action.on(password, "type", text="hunter2-hunter2"), obs)
    assert outcome.ok
    obs = await session.observe()
    key = await session.page.locator(".api-key").bounding_box()
    heading = await session.page.locator("h1").bounding_box()
    for png in (obs.screenshot, obs.som_screenshot):
        assert _region(png, password.bbox) == {(0, 0, 0)}
    assert _region(obs.screenshot, (key["x"], key["y"], key["width"], key["height"])) == {(0, 0, 0)}
    assert len(_region(obs.screenshot, (heading["x"], heading["y"], heading["width"], heading["height"]))) > 1
