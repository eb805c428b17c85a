"""Redaction of a site's secrets from an observation's text (explorer/secrets.py)."""

from __future__ import annotations

from explorer.config import LoginStep, SiteConfig
from explorer.secrets import redact, site_secrets
from tests.fast.conftest import PAGES, element


def test_a_secret_leaves_every_text_field_and_the_urls_stay(monkeypatch):
    monkeypatch.setenv("SHOP_TOKEN", "tok-9f3kq2zx")
    site = SiteConfig(
        name="s", start_url="http://shop.test/", login=[LoginStep(action="fill", selector="#t", value="${SHOP_TOKEN}")]
    )
    secrets = site_secrets(site)
    assert secrets == ["tok-9f3kq2zx"]
    home = PAGES["home"]
    leaky = home.model_copy(
        update={
            "title": "Home tok-9f3kq2zx",
            "texts": ["your key is tok-9f3kq2zx"],
            "elements": [*home.elements, element(9, "link", "Key tok-9f3kq2zx", "/k?t=tok-9f3kq2zx")],
        }
    )
    clean = redact(leaky, secrets)
    dump = clean.model_dump_json(exclude={"screenshot", "som_screenshot"})
    assert "tok-9f3kq2zx" not in dump.replace("/k?t=tok-9f3kq2zx", "")  # only the link's URL keeps it
    assert clean.title == "Home [SECRET]" and clean.elements[-1].name == "Key [SECRET]"
    assert clean.elements[-1].href.endswith("/k?t=tok-9f3kq2zx")  # the explorer navigates by URLs
    assert redact(home, secrets) is home  # nothing to redact: the same object
