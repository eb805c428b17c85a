"""HTTP tests of the bundled demo sites, using only the standard library against live servers."""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.request
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urljoin, urlsplit

import pytest

from sites import SITE_NAMES, SiteServers, serve_sites


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None


def _opener(follow: bool = True) -> urllib.request.OpenerDirector:
    handlers: list = [urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())]
    if not follow:
        handlers.append(_NoRedirect())
    return urllib.request.build_opener(*handlers)


def _fetch(opener, url: str, data: dict | None = None, timeout: float = 15):
    """(status, headers, body text, final url); HTTP errors are answers too."""
    body = urlencode(data).encode() if data is not None else None
    try:
        resp = opener.open(url, data=body, timeout=timeout)
    except urllib.error.HTTPError as err:
        resp = err
    with resp:
        raw = resp.read()
        ctype = resp.headers.get("Content-Type", "")
        text = raw.decode("utf-8", "replace") if ("text" in ctype or "json" in ctype) else raw.decode("latin-1")
        return resp.getcode(), resp.headers, text, resp.geturl()


@pytest.fixture(scope="module")
def servers():
    s = serve_sites(port=0, slow_seconds=2)
    yield s
    s.stop()


def _url(servers: SiteServers, site: str, path: str) -> str:
    return servers.urls[site].rstrip("/") + path


def _reset(servers: SiteServers, site: str) -> None:
    status, _, body, _ = _fetch(_opener(), _url(servers, site, "/__reset"), {})
    assert status == 200 and json.loads(body) == {"ok": True, "site": site}


# ------------------------------------------------------------------------------------------ basics
def test_api_shape(servers):
    assert SITE_NAMES == ("shop", "forum", "classifieds")
    assert set(servers.urls) == set(SITE_NAMES)
    ports = {urlsplit(u).port for u in servers.urls.values()}
    assert len(ports) == 3
    assert all(u.startswith("http://127.0.0.1:") and u.endswith("/") for u in servers.urls.values())


@pytest.mark.parametrize("site", SITE_NAMES)
def test_home_page_is_html(servers, site):
    status, headers, body, _ = _fetch(_opener(), servers.urls[site])
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert body.lstrip().lower().startswith("<!doctype html>")
    assert "<header" in body and "<footer" in body


@pytest.mark.parametrize("site", SITE_NAMES)
def test_health_and_reset_hooks(servers, site):
    status, headers, body, _ = _fetch(_opener(), _url(servers, site, "/__health"))
    assert status == 200 and json.loads(body) == {"ok": True}
    for data in (None, {}):  # GET and POST
        status, _, body, _ = _fetch(_opener(), _url(servers, site, "/__reset"), data)
        assert status == 200 and json.loads(body) == {"ok": True, "site": site}


def test_session_cookie_is_set(servers):
    _, headers, _, _ = _fetch(_opener(), servers.urls["shop"])
    assert re.match(r"sid=[A-Za-z0-9_-]{8,}; Path=/", headers["Set-Cookie"])


# -------------------------------------------------------------------------------------------- shop
def test_cart_add_update_and_reset(servers):
    _reset(servers, "shop")
    op = _opener()
    _, _, body, _ = _fetch(op, servers.urls["shop"])
    assert "Cart (0)" in body
    status, _, body, final = _fetch(op, _url(servers, "shop", "/cart/add"), {"pid": "1", "quantity": "1"})
    assert status == 200 and final.endswith("/cart")
    assert "Cart (1)" in body and "Checkout" in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/cart/update"), {"pid": "1", "quantity": "3"})
    assert "Cart (3)" in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/cart/update"), {"pid": "1", "quantity": "lots"})
    assert "Quantity must be a whole number" in body and "Cart (3)" in body
    other = _opener()  # another visitor has their own cart
    assert "Cart (0)" in _fetch(other, servers.urls["shop"])[2]
    _reset(servers, "shop")
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/cart"))  # same sid cookie, state gone
    assert "Cart (0)" in body and "Your cart is empty" in body


def test_cart_remove_checkout_and_pay(servers):
    op = _opener()
    _fetch(op, _url(servers, "shop", "/cart/add"), {"pid": "2", "quantity": "2"})
    _fetch(op, _url(servers, "shop", "/cart/add"), {"pid": "3", "quantity": "1"})
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/cart/remove"), {"pid": "3"})
    assert "Cart (2)" in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/checkout"))
    assert "Pay now" in body and 'action="/checkout/pay"' in body
    status, _, body, _ = _fetch(op, _url(servers, "shop", "/checkout/pay"), {"delivery": "express"})
    assert status == 200 and "Thank you for your order!" in body and "Cart (0)" in body


def test_add_to_cart_bad_quantity_rerenders_product(servers):
    status, _, body, _ = _fetch(_opener(), _url(servers, "shop", "/cart/add"), {"pid": "4", "quantity": "-2"})
    assert status == 200 and "Please enter a quantity" in body and "Add to cart" in body


def test_shop_login_logout(servers):
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/login"), {"username": "demo", "password": "nope"})
    assert "Invalid username or password." in body and ">Log in<" in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/login"), {"username": "demo", "password": "demo"})
    assert ">Log out<" in body and 'href="/logout"' in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/logout"))
    assert ">Log in<" in body


def test_product_page_features(servers):
    _, _, body, _ = _fetch(_opener(), _url(servers, "shop", "/p/5"))
    for text in (
        ">Description<",
        ">Specifications<",
        ">Reviews<",
        ">Size guide<",
        ">Add to cart<",
        'action="/cart/add"',
        "window.open('/share?p=5', 'share', 'width=520,height=420')",
        '<dialog id="size-guide"',
        'data-toggle="faq-1"',
        ">All reviews<",
    ):
        assert text in body, text


def test_home_widgets_and_external_links(servers):
    _, _, body, _ = _fetch(_opener(), servers.urls["shop"])
    assert '<iframe class="chat-frame" src="/widget/chat"' in body
    assert "<promo-banner" in body and "attachShadow({ mode: 'open' })" in body and "Claim offer" in body
    assert "location.href = 'https://partner.example.net/deals'" in body and "Visit partner deals" in body
    assert 'href="https://instagram.example.com/northwind">Instagram<' in body
    assert 'href="https://partner.example.net/">Partner store<' in body
    for link in (
        'href="/deals/flash">Flash deals<',
        'href="/reviews/all">All reviews<',
        'href="/account/orders">My orders<',
        'href="/catalogue.pdf">Download catalogue (PDF)<',
    ):
        assert link in body, link
    _, _, chat, _ = _fetch(_opener(), _url(servers, "shop", "/widget/chat"))
    assert 'placeholder="Type a message"' in chat and "Start chat" in chat


@pytest.mark.parametrize(
    "site,path,labels",
    [
        (
            "shop",
            "/",
            [
                "Log in",
                "Cart (0)",
                "Flash deals",
                "All reviews",
                "My orders",
                "Download catalogue (PDF)",
                "Instagram",
                "Partner store",
                "Visit partner deals",
            ],
        ),
        ("shop", "/p/2", ["Description", "Specifications", "Reviews", "Size guide", "Add to cart", "Share"]),
        ("forum", "/t/1", ["Reply", "Profile", "Settings", "Log out"]),
        (
            "classifieds",
            "/l/2",
            [
                "Show phone number",
                "Report listing",
                "Share",
                "View on map",
                "Post an ad",
                "You are our 1,000,000th visitor! Claim your prize",
            ],
        ),
    ],
)
def test_key_labels_are_unique(servers, site, path, labels):
    """Each named control appears once, so role/name lookups in the agent's tests stay unambiguous."""
    body = _fetch(_opener(), _url(servers, site, path))[2]
    body = re.sub(r"<(script|dialog)\b.*?</\1>", "", body, flags=re.DOTALL)  # code, and closed dialogs
    for label in labels:
        assert body.count(f">{label}<") == 1, label


def test_500_page(servers):
    status, headers, body, _ = _fetch(_opener(), _url(servers, "shop", "/reviews/all"))
    assert status == 500 and headers["Content-Type"].startswith("text/html")
    assert "Reviews are temporarily unavailable" in body and "<footer" in body


def test_redirect_loop(servers):
    op = _opener(follow=False)
    status, headers, _, _ = _fetch(op, _url(servers, "shop", "/account/orders"))
    assert status == 302 and headers["Location"] == "/account/orders?n=1"
    status, headers, _, _ = _fetch(op, _url(servers, "shop", "/account/orders?n=1"))
    assert status == 302 and headers["Location"] == "/account/orders?n=2"


def test_catalogue_is_an_attachment(servers):
    status, headers, body, _ = _fetch(_opener(), _url(servers, "shop", "/catalogue.pdf"))
    assert status == 200 and headers["Content-Type"] == "application/pdf"
    assert headers["Content-Disposition"].startswith("attachment")
    assert body.startswith("%PDF-") and body.rstrip().endswith("%%EOF")


def test_slow_page(servers):
    start = time.monotonic()
    status, _, body, _ = _fetch(_opener(), _url(servers, "shop", "/deals/flash"))
    assert status == 200 and "Flash deals" in body
    assert time.monotonic() - start >= 1.9


def test_category_filters_and_errors(servers):
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/c/jackets"))
    assert "10 products" in body and 'aria-current="page">1<' in body and "page=2" in body
    _, _, body, _ = _fetch(op, _url(servers, "shop", "/c/jackets?sort=price_asc&max_price=abc&page=9"))
    assert "Max price must be a whole number" in body
    prices = [float(p.replace(",", "")) for p in re.findall(r'class="price">\$([\d,.]+)<', body)]
    assert prices == sorted(prices) and prices


# ------------------------------------------------------------------------------------------- forum
def test_forum_reply_then_reset(servers):
    _reset(servers, "forum")
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/t/2"))
    assert "guest_demo" in body and ">Reply<" in body and 'action="/t/2/reply"' in body and "<user-card" in body
    status, _, body, final = _fetch(op, _url(servers, "forum", "/t/2/reply"), {"body": "Hello from the test suite"})
    assert status == 200 and final.endswith("/t/2") and "Hello from the test suite" in body
    _, _, body, _ = _fetch(_opener(), _url(servers, "forum", "/t/2"))  # shared state: others see it
    assert "Hello from the test suite" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/t/2/reply"), {"body": "   "})
    assert "Your reply is empty" in body
    _reset(servers, "forum")
    assert "Hello from the test suite" not in _fetch(op, _url(servers, "forum", "/t/2"))[2]


def test_forum_delete_own_post(servers):
    _reset(servers, "forum")
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/t/1"))
    actions = re.findall(r'action="(/t/1/delete/\d+)"', body)
    assert actions
    before = body.count('class="card post"')
    _, _, body, _ = _fetch(op, _url(servers, "forum", actions[-1]), {})
    assert body.count('class="card post"') == before - 1
    _reset(servers, "forum")
    assert _fetch(op, _url(servers, "forum", "/t/1"))[2].count('class="card post"') == before


def test_forum_user_menu_login_and_profile(servers):
    op = _opener()
    _, _, body, _ = _fetch(op, servers.urls["forum"])
    for text in ('data-toggle="user-menu"', ">Profile<", ">Settings<", 'href="/logout">Log out<'):
        assert text in body, text
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/logout"))
    assert "guest_demo</span>" not in body and "Log in" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/login"), {"username": "tester", "password": "bad"})
    assert "Wrong password" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/login"), {"username": "tester", "password": "demo"})
    assert "tester</span>" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/u/maple_fern"))
    assert all(f">{tab}<" in body for tab in ("Posts", "About", "Badges"))


def test_forum_board_sort_and_events(servers):
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/f/cooking?sort=top&page=2"))
    assert body.count('class="thread-title"') == 10 and 'aria-current="page">2<' in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/events"))
    assert "December 2026" in body and "month=2027-01" in body and "month=2026-11" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/events?month=2999-05"))
    assert "May 2999" in body and ">Next month" in body
    _, _, body, _ = _fetch(op, _url(servers, "forum", "/search?q=compost"))
    assert "Search results" in body


# ------------------------------------------------------------------------------------- classifieds
def test_classifieds_listing_contact_and_trap(servers):
    op = _opener()
    _, _, body, _ = _fetch(op, _url(servers, "classifieds", "/l/3"))
    for text in (
        "Show phone number",
        "Report listing",
        "window.open('/share?l=3', 'share', 'width=520,height=420')",
        'href="https://maps.example.org/?q=',
        ">View on map<",
        'data-tab="photo-2"',
    ):
        assert text in body, text
    _, _, body, _ = _fetch(
        op,
        _url(servers, "classifieds", "/l/3/contact"),
        {"name": "Ann", "email": "not-an-email", "message": "Is it still available?"},
    )
    assert "valid email" in body and 'value="Ann"' in body
    _, _, body, _ = _fetch(
        op,
        _url(servers, "classifieds", "/l/3/contact"),
        {"name": "Ann", "email": "ann@example.com", "message": "Is it still available?"},
    )
    assert "Thanks, Ann!" in body
    _, _, body, _ = _fetch(op, servers.urls["classifieds"])
    assert 'href="/spin-to-win">You are our 1,000,000th visitor! Claim your prize<' in body
    assert all(f'name="{n}"' in body for n in ("cat", "region", "max_price", "sort"))
    _, _, body, _ = _fetch(op, _url(servers, "classifieds", "/spin-to-win"))
    assert "while (true) { alert('You won! Click OK to claim.'); }" in body


def test_classifieds_search_and_post_flow(servers):
    _reset(servers, "classifieds")
    op = _opener()
    _, _, body, _ = _fetch(
        op, _url(servers, "classifieds", "/search?cat=bikes&region=&max_price=&sort=price_asc&page=")
    )
    assert "15 ads" in body
    _, _, body, _ = _fetch(op, _url(servers, "classifieds", "/search?cat=spaceships"))
    assert "Please choose a category" in body
    ad = {
        "title": "Test bicycle bell",
        "category": "bikes",
        "region": "old-town",
        "price": "5",
        "description": "A shiny bell, rings loudly, barely used.",
    }
    _, _, body, _ = _fetch(op, _url(servers, "classifieds", "/post"), {**ad, "price": "five"})
    assert "Enter a price in dollars" in body
    _, _, body, _ = _fetch(op, _url(servers, "classifieds", "/post"), {k: v for k, v in ad.items() if k != "region"})
    assert "Preview your ad" in body and "Publish ad" in body  # region is optional
    status, _, body, final = _fetch(op, _url(servers, "classifieds", "/post/publish"), ad)
    assert status == 200 and final.endswith("/l/121") and "Test bicycle bell" in body
    _reset(servers, "classifieds")
    assert _fetch(op, _url(servers, "classifieds", "/l/121"))[0] == 404


# ------------------------------------------------------------------------------------ cross-cutting
@pytest.mark.parametrize(
    "site,path",
    [
        ("shop", "/p/99999"),
        ("shop", "/c/no-such-category"),
        ("shop", "/nowhere"),
        ("forum", "/t/99999"),
        ("forum", "/f/nope"),
        ("forum", "/u/nobody_here"),
        ("classifieds", "/l/99999"),
        ("classifieds", "/share?l=x"),
    ],
)
def test_unknown_ids_give_styled_404(servers, site, path):
    status, headers, body, _ = _fetch(_opener(), _url(servers, site, path))
    assert status == 404 and headers["Content-Type"].startswith("text/html")
    assert "<footer" in body and "404" in body


_LIVE_STAMP = re.compile(r'<time datetime="[^"]*" data-ago>[^<]*</time>')


def test_determinism_across_servers():
    """One seed serves the same pages on every server, and another seed other pages; the forum's live "Updated"
    stamps (the wall clock, on purpose) are left out, as two servers may answer in different seconds."""
    paths = {"shop": "/p/7", "forum": "/t/12", "classifieds": "/l/9"}
    bodies = {}
    for seed in (0, 0, 1):
        with serve_sites(port=0, seed=seed, slow_seconds=0) as s:
            bodies.setdefault(seed, []).append(
                {n: _LIVE_STAMP.sub("<time>", _fetch(_opener(), _url(s, n, p))[2]) for n, p in paths.items()}
            )
    assert bodies[0][0] == bodies[0][1]
    for name in paths:
        assert bodies[0][0][name] != bodies[1][0][name], name


def test_stop_closes_ports():
    s = serve_sites(port=0)
    url = s.urls["forum"]
    assert _fetch(_opener(), url)[0] == 200
    s.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_concurrent_requests(servers):
    urls = [
        _url(servers, site, p)
        for site, p in [("shop", "/"), ("shop", "/p/3"), ("forum", "/t/5"), ("classifieds", "/search?page=2")] * 10
    ]
    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(lambda u: _fetch(_opener(), u)[0], urls))
    assert statuses == [200] * len(urls)


_EXTERNAL_RESOURCE = re.compile(
    r"<(?:script|img|iframe|link|source|video|audio|embed|object|use|image)\b[^>]*?\b(?:src|href|data|srcset)\s*=\s*"
    r"[\"']?\s*(?:https?:)?//",
    re.IGNORECASE,
)
_SKIP = ("/deals/flash", "/account/orders", "/catalogue.pdf", "/logout", "/reviews/all")


@pytest.mark.parametrize("site", SITE_NAMES)
def test_crawl_no_external_resources_and_no_crashes(servers, site, limit=70):
    """Breadth-first over same-site links: every page answers, none loads anything from another host."""
    base = servers.urls[site]
    op = _opener(follow=False)
    seen, queue, visited = {"/"}, deque(["/"]), 0
    css = _fetch(op, _url(servers, site, "/static/sites.css"))[2]
    assert not re.search(r"url\(\s*[\"']?(?:https?:)?//|@import", css)
    while queue and visited < limit:
        path = queue.popleft()
        status, headers, body, _ = _fetch(op, urljoin(base, path))
        visited += 1
        assert status in (200, 302, 303, 404), (path, status)
        if not headers.get("Content-Type", "").startswith("text/html"):
            continue
        assert not _EXTERNAL_RESOURCE.search(body), path
        assert "fonts.googleapis" not in body and "cdn." not in body
        markup = re.sub(r"<script\b.*?</script>", "", body, flags=re.DOTALL)
        for href in re.findall(r'<a\b[^>]*\bhref="([^"#]+)', markup):
            href = href.replace("&amp;", "&")
            if href.startswith("/") and not href.startswith("//") and not href.startswith(_SKIP) and href not in seen:
                seen.add(href)
                queue.append(href)
    assert visited >= 25
