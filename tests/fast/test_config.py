"""Typed configs: loading, defaults, validation errors that name the field, secrets from the environment."""

from pathlib import Path

import pytest

from explorer.config import BrowserConfig, LoginStep, Policy, SiteConfig, load_site_config
from explorer.errors import BrowserNotFound, ConfigError
from explorer.records import Element
from explorer.safety import allowed_hosts, forbidden_reason, forbidden_request, in_scope

ROOT = Path(__file__).resolve().parents[2]


def test_bare_url_defaults_allowed_origins_to_its_origin():
    site = load_site_config("http://127.0.0.1:9000/shop/?a=1")
    assert site.allowed_origins == ["http://127.0.0.1:9000"]
    assert site.name == "127.0.0.1:9000"


def test_toml_config_loads(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\nstart_url = "http://a.test/"\n[timeouts]\nnavigation_ms = 123\n')
    site = load_site_config(str(path))
    assert site.timeouts.navigation_ms == 123 and site.allowed_origins == ["http://a.test"]


@pytest.mark.parametrize("name", ["shop", "forum", "classifieds"])
def test_bundled_configs_load(name):
    assert load_site_config(str(ROOT / "configs" / f"{name}.toml")).reset_url.endswith("/__reset")


def test_bad_field_names_field_and_value(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nstart_url: http://a.test/\ntimeouts: {navigation_ms: -5}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: field 'timeouts.navigation_ms'.*-5"):
        load_site_config(str(path))


def test_unknown_field_and_bad_url_and_bad_regex(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nstart_url = "http://a.test/"\nstart_ulr = "typo"\n')
    with pytest.raises(ConfigError, match="start_ulr"):
        load_site_config(str(path))
    with pytest.raises(ConfigError, match="start_url"):
        SiteConfig.from_url("ftp://nowhere/")
    with pytest.raises(ValueError, match="bad regex"):
        Policy(forbid=["(unclosed"])


def test_missing_file_and_unparsable_file(tmp_path):
    with pytest.raises(ConfigError, match="no such site config"):
        load_site_config(str(tmp_path / "nope.toml"))
    bad = tmp_path / "broken.toml"
    bad.write_text("name = [")
    with pytest.raises(ConfigError, match="broken.toml: cannot parse"):
        load_site_config(str(bad))


def test_login_secret_comes_from_env(monkeypatch):
    step = LoginStep(action="fill", selector="#pw", value="${SCALEHOP_TEST_PW}")
    assert step.is_secret
    with pytest.raises(ConfigError, match="SCALEHOP_TEST_PW"):
        step.resolved_value()
    monkeypatch.setenv("SCALEHOP_TEST_PW", "hunter2")
    assert step.resolved_value() == "hunter2"


@pytest.mark.parametrize(
    "url,inside",
    [
        ("http://127.0.0.1:8700/x?y=1", True),
        ("http://127.0.0.1:8701/", False),  # another port is another origin
        ("https://shop.example.com/a", True),
        ("https://example.com/", True),
        ("https://evil-example.com/", False),
        ("http://shop.example.com/", False),  # scheme matters
        ("data:text/plain,hi", True),
        ("about:blank", True),
        ("http://localhost:8700/", True),  # a loopback alias on the same port is the same server
        ("http://[::1]:8700/", True),
        ("http://localhost:8701/", False),
        ("http://127.0.0.1:8700@evil.test/", False),  # userinfo: the host is evil.test
        ("https://127.0.0.1:8700/", False),
    ],
)
def test_scope_rules(url, inside):
    assert in_scope(url, ["http://127.0.0.1:8700", "https://*.example.com"]) == inside


@pytest.mark.parametrize(
    "name,href,role,forbidden",
    [
        ("Log out", None, "link", True),
        ("Account", "http://a.test/logout", "link", True),
        ("Pay now", None, "button", True),
        ("Delete", None, "link", True),
        ("Payments history", None, "link", False),
        ("Laptops", None, "link", False),
    ],
)
def test_policy_forbids_by_name_and_href(name, href, role, forbidden):
    element = Element(mark=1, tag="a", role=role, name=name, href=href, bbox=(0, 0, 1, 1), point=(0, 0), key="k")
    reason = forbidden_reason(element, SiteConfig.from_url("http://a.test/").policy)
    assert bool(reason) == forbidden


def test_missing_browser_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("SCALEHOP_CHROMIUM", "/nonexistent/chrome")
    with pytest.raises(BrowserNotFound, match="apt-get install -y chromium"):
        BrowserConfig().executable_path()


def test_loopback_origins_let_the_dns_guard_resolve_localhost():
    assert allowed_hosts(["http://127.0.0.1:8700"]) == ["127.0.0.1", "localhost"]
    assert allowed_hosts(["https://*.example.com"]) == ["example.com"]


@pytest.mark.parametrize(
    "url,method,main,forbidden",
    [
        ("http://a.test/api/unsubscribe", "POST", False, True),  # a script's POST
        ("http://a.test/account/delete?id=3", "GET", True, True),  # a navigation a handler assigned
        ("http://a.test/static/delete-icon.png", "GET", False, False),  # assets are never refused
        ("http://delete.a.test/cart", "POST", False, False),  # only the path and query are matched
        ("http://a.test/cart/add", "POST", False, False),
    ],
)
def test_requests_that_act_are_refused_by_path(url, method, main, forbidden):
    policy = SiteConfig.from_url("http://a.test/").policy
    assert bool(forbidden_request(url, method, main, policy)) == forbidden


def test_model_options_pin_the_dtype_and_threads_and_name_a_bad_value():
    """`--dtype` and `--threads` reach the ModelConfig of every model-calling verb (a bench that compares machines
    pins float32: greedy answers differ between dtypes); left out, the config's defaults stand."""
    from flows.cli import _parser, model_config

    parser = _parser()
    pinned = model_config(parser.parse_args(["eval", "bundled:shop", "--dtype", "float32", "--threads", "1"]))
    assert (pinned.dtype, pinned.threads) == ("float32", 1)
    default = model_config(parser.parse_args(["explore", "http://127.0.0.1:9/"]))
    assert (default.dtype, default.threads) == ("auto", None)
    with pytest.raises(ConfigError, match="threads"):
        model_config(parser.parse_args(["eval", "bundled:shop", "--threads", "0"]))
    with pytest.raises(SystemExit):  # argparse names the choices
        parser.parse_args(["eval", "bundled:shop", "--dtype", "int4"])
