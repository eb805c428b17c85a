"""Django's admin, a third-party app installed from PyPI and served offline: its server, its reset, its site
config, and the explorer's browser on it (login steps, navigation, in-page changes, policy refusals)."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from explorer import BrowserConfig, Chromium
from explorer.calibration import build_pairs, error_rates, judge_pairs, load_specs
from explorer.config import DEFAULT_DELTA, DEFAULT_FORBID, load_site_config, origin_of
from explorer.records import Action, Element, Observation
from explorer.safety import forbidden_reason
from tests.thirdparty import REPO_ROOT, django_admin_site, serve_django_admin
from tests.thirdparty.django_admin import ADMIN_PASSWORD, ADMIN_USERNAME, PASSWORD_ENV

FAST = {"navigation_ms": 8000, "action_ms": 4000}
THIRD_PARTY_PAIRS = "tests/thirdparty/state_pairs.yaml"
INDEX_TITLE = "Site administration | Django site admin"


@pytest.fixture(scope="module")
def admin_server():
    """One Django admin server (subprocess, fresh seeded SQLite) for this module."""
    with serve_django_admin() as server:
        yield server


# ---- HTTP --------------------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browserless:
    """A cookie-keeping urllib client that logs in through the admin's form, CSRF token included."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(self.base + path, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        status, page = self.get(path)
        assert status == 200, (path, status)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + path})
        try:
            with self.opener.open(request, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def login(self) -> None:
        status, page = self.post("admin/login/?next=/admin/", {"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD})
        assert status == 200 and "<title>Site administration" in page, page[:500]


def test_server_answers_serves_static_and_admin_asks_to_log_in(admin_server):
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", admin_server.url)
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(admin_server.url + "admin/", timeout=10)
    assert redirect.value.code == 302
    assert redirect.value.headers["Location"] == "/admin/login/?next=/admin/"
    with urllib.request.urlopen(admin_server.url + "static/admin/css/base.css", timeout=10) as css:
        assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    client = Browserless(admin_server.url)
    status, page = client.get("about/")  # a seeded flatpage, public
    assert status == 200 and "<h1>About us</h1>" in page
    assert client.get("blog/")[0] == 410  # a seeded redirect to nowhere
    assert client.get("no-such-page/")[0] == 404


def test_reset_restores_a_deleted_flatpage_and_logs_everyone_out(admin_server):
    client = Browserless(admin_server.url)
    client.login()
    status, changelist = client.get("admin/flatpages/flatpage/")
    assert status == 200
    pk = re.search(r'href="/admin/flatpages/flatpage/(\d+)/change/">/about/</a>', changelist).group(1)
    status, page = client.post(f"admin/flatpages/flatpage/{pk}/delete/", {"post": "yes"})
    assert status == 200 and "was deleted successfully" in page
    assert client.get("about/")[0] == 404
    assert ">/about/</a>" not in client.get("admin/flatpages/flatpage/")[1]

    with urllib.request.urlopen(urllib.request.Request(admin_server.url + "__reset", data=b""), timeout=10) as resp:
        assert resp.status == 200  # POST (what BrowserSession.reset sends)
    assert client.get("about/")[0] == 200
    assert client.get("admin/")[1].count('id="login-form"') == 1  # the session was in the database: logged out
    client.login()
    assert f'href="/admin/flatpages/flatpage/{pk}/change/">/about/</a>' in client.get("admin/flatpages/flatpage/")[1]
    assert Browserless(admin_server.url).get("__reset")[0] == 200  # GET resets too


# ---- the site config -------------------------------------------------------------------------------------


def _el(name: str, role: str = "button", href: str | None = None, tag: str = "input") -> Element:
    return Element(mark=1, tag=tag, role=role, name=name, href=href, bbox=(0, 0, 10, 10), point=(5, 5), key="k")


def test_site_config_fields_and_the_yaml_twin(monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    site = django_admin_site("http://127.0.0.1:8800")
    assert site.name == "django-admin"
    assert site.start_url == "http://127.0.0.1:8800/admin/"
    assert site.reset_url == "http://127.0.0.1:8800/__reset"
    assert site.allowed_origins == ["http://127.0.0.1:8800"]
    assert [s.action for s in site.login] == ["goto", "fill", "fill", "click"]
    password = site.login[2]
    assert password.selector == "#id_password" and password.is_secret
    assert password.resolved_value() == ADMIN_PASSWORD  # the helper set the variable's default
    assert site.policy.forbid[: len(DEFAULT_FORBID)] == list(DEFAULT_FORBID)
    assert django_admin_site("http://127.0.0.1:8800/", name="other").name == "other"
    assert load_site_config(str(REPO_ROOT / "tests/thirdparty/django-admin.yaml")) == site


def test_policy_forbids_the_admin_writes_and_allows_browsing():
    policy = django_admin_site("http://127.0.0.1:8800/").policy
    forbidden = [
        _el("Save"),
        _el("Save and add another"),
        _el("Save and continue editing"),
        _el("Save as new"),
        _el("Yes, I’m sure"),
        _el("Yes, I'm sure"),
        _el("Log out", tag="button"),
        _el("Delete", "link", "http://127.0.0.1:8800/admin/auth/user/2/delete/", "a"),
        _el("Change password", "link", "http://127.0.0.1:8800/admin/password_change/", "a"),
        _el("Reset password", "link", "http://127.0.0.1:8800/admin/auth/user/2/password/", "a"),
        _el("Add another site", "link", "http://127.0.0.1:8800/admin/sites/site/add/?_to_field=id&_popup=1", "a"),
        _el("Toggle theme (current theme: auto)", tag="button"),
        _el("By groups", tag="summary"),  # a filter section's open state outlives a reset (sessionStorage)
    ]
    for element in forbidden:
        assert forbidden_reason(element, policy), element.name
    allowed = [
        _el("Go", tag="button"),
        _el("Search"),
        _el("Log in"),
        _el("Show counts", "link", "http://127.0.0.1:8800/admin/auth/user/?_facets=True", "a"),
        _el("Change", "link", "http://127.0.0.1:8800/admin/auth/user/", "a"),
        _el("Add user", "link", "http://127.0.0.1:8800/admin/auth/user/add/", "a"),
        _el("History", "link", "http://127.0.0.1:8800/admin/auth/user/2/history/", "a"),
        _el("Password:", "textbox", tag="input"),
        _el("Select all objects on this page for an action", "checkbox"),
        _el("Advanced options", tag="summary"),
        _el("Sorted by username", "link", "http://127.0.0.1:8800/admin/auth/user/?o=1", "a"),
    ]
    for element in allowed:
        assert forbidden_reason(element, policy) is None, element.name


# ---- the explorer's browser ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def admin_chromium(admin_server):
    """One real headless Chromium, scoped to the admin's origin."""
    browser = await Chromium.launch(BrowserConfig(), [origin_of(admin_server.url)])
    yield browser
    await browser.close()


@pytest.fixture
async def admin_session(admin_chromium, admin_server):
    """A browser session on the admin after `reset()`: the site restored and the login steps run."""
    session = await admin_chromium.new_session(django_admin_site(admin_server.url, timeouts=FAST))
    await session.reset()
    yield session
    await session.close()


async def find(session, name: str, role: str | None = None) -> tuple[Observation, Element]:
    """Observe, scrolling down until an element named `name` (any case) is in view: (observation, element)."""
    for _ in range(8):
        obs = await session.observe()
        found = [e for e in obs.elements if e.name.lower() == name.lower() and (role is None or e.role == role)]
        if found:
            return obs, found[0]
        await session.act(Action(kind="scroll", direction="down"))
    raise AssertionError(f"no element named {name!r} on {obs.url}: {[e.name for e in obs.elements]}")


async def test_reset_logs_in_and_links_navigate(admin_session, admin_server):
    obs = await admin_session.observe()
    assert obs.title == INDEX_TITLE
    assert obs.url == admin_server.url + "admin/"
    assert not [e for e in admin_session.events if "login step" in e.detail]
    names = {e.name for e in obs.elements if e.role == "link"}
    assert {"Users", "Groups", "Flat pages", "Redirects", "Sites", "DOCUMENTATION"} <= names  # CSS capitals
    users = next(e for e in obs.elements if e.name == "Users" and e.role == "link")
    outcome = await admin_session.act(Action.on(users), obs)
    assert outcome.ok, outcome.error
    assert outcome.navigation == "GET"
    assert outcome.url_after == admin_server.url + "admin/auth/user/"
    changelist = await admin_session.observe()
    assert changelist.title == "Select user to change | Django site admin"
    assert {"grace", "linus", "margaret", "alan", "barbara", "ken"} <= {e.name for e in changelist.elements}


async def test_in_page_changes_keep_the_url(admin_session, admin_server):
    await admin_session.act(Action(kind="goto", url=admin_server.url + "admin/auth/user/"))
    obs, select_all = await find(admin_session, "Select all objects on this page for an action", "checkbox")
    rows = [e for e in obs.elements if e.name.startswith("Select this object for an action")]
    assert rows and all(e.value == "" for e in rows)
    outcome = await admin_session.act(Action.on(select_all), obs)
    assert outcome.ok and outcome.navigation is None and outcome.url_after == obs.url
    after = await admin_session.observe()
    assert all(e.value == "checked" for e in after.elements if e.name.startswith("Select this object"))

    await admin_session.act(Action(kind="goto", url=admin_server.url + "admin/flatpages/flatpage/2/change/"))
    obs, advanced = await find(admin_session, "Advanced options")  # a collapsed fieldset (<details>)
    assert "Template name:" not in {e.name for e in obs.elements}
    outcome = await admin_session.act(Action.on(advanced), obs)
    assert outcome.ok and outcome.navigation is None and outcome.url_after == obs.url
    _, template = await find(admin_session, "Template name:", "textbox")
    assert template.enabled


async def test_policy_refuses_delete_save_and_log_out(admin_session, admin_server):
    await admin_session.act(Action(kind="goto", url=admin_server.url + "admin/auth/user/2/change/"))
    for name in ("Log out", "Reset password", "Save", "Delete"):  # top to bottom: find() scrolls down
        obs, element = await find(admin_session, name)
        outcome = await admin_session.act(Action.on(element), obs)
        assert not outcome.ok and "policy forbids" in outcome.error, (name, outcome.error)
        assert [e.kind for e in outcome.events] == ["refused"]
        assert outcome.url_after == obs.url
    await admin_session.act(Action(kind="goto", url=admin_server.url + "admin/auth/user/"))
    obs = await admin_session.observe()
    assert obs.title == "Select user to change | Django site admin"  # still logged in, nothing deleted
    assert "grace" in {e.name for e in obs.elements}


# ---- state identity ----------------------------------------------------------------------------------------


async def test_state_identity_on_the_admins_labelled_pairs(admin_chromium, admin_server):
    """tests/thirdparty/state_pairs.yaml on the real admin: typed values, focus, hover and a fieldset opened and
    closed stay one state; a fieldset left open, a selected row, a filter, a sort and sibling change forms do not.
    The seed's raw-pixel rule splits most of the former (bench/dedup.py prints both per site)."""
    site = django_admin_site(admin_server.url, timeouts=FAST)
    pairs = await build_pairs(admin_chromium, {site.name: site}, load_specs(REPO_ROOT / THIRD_PARTY_PAIRS))
    assert len(pairs) >= 15 and {p.same for p in pairs} == {True, False}
    judged = judge_pairs(pairs, DEFAULT_DELTA, "identity")
    wrong = [p.label for p, (same, said) in zip(pairs, judged, strict=True) if same != said]
    assert wrong == []
    assert error_rates(judge_pairs(pairs, DEFAULT_DELTA, "raw"))[1] > 0.3
