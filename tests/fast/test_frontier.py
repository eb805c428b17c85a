"""The crawl's frontier (explorer/crawl.py) on hand-made observations: which links it queues, which elements it
returns as buttons to click, and that each page and each button counts once."""

from __future__ import annotations

from explorer.config import SiteConfig
from explorer.crawl import Frontier
from explorer.dedup import normalize_url
from explorer.records import Element, Observation

ORIGIN = "http://shop.test"


def _el(mark: int, role: str, name: str, href: str | None = None) -> Element:
    return Element(mark=mark, tag="a" if href else "button", role=role, name=name, href=href, bbox=(0, 0, 9, 9),
                   point=(1, 1), key=f"{role}:{name}")  # fmt: skip


def _obs(path: str, elements: list[Element]) -> Observation:
    return Observation(url=ORIGIN + path, title="t", elements=elements, screenshot=b"", som_screenshot=b"", text="",
                       viewport=(800, 600))  # fmt: skip


HOME = _obs(
    "/",
    [
        _el(1, "link", "Jackets", ORIGIN + "/c/jackets#top"),
        _el(2, "link", "Jackets again", ORIGIN + "/c/jackets?sid=7"),  # the same page once `sid` is ignored
        _el(3, "link", "Reviews", ORIGIN + "/#reviews"),  # an in-page anchor: clicked
        _el(4, "link", "Home", ORIGIN + "/"),  # this page: neither queued nor clicked
        _el(5, "link", "Log out", ORIGIN + "/logout"),  # forbidden by the default policy
        _el(6, "link", "Partner", "https://partner.example.net/"),  # another origin
        _el(7, "link", "Open menu", "javascript:void(0)"),  # a script link: clicked
        _el(8, "button", "Size guide"),
        _el(9, "textbox", "Search"),  # typed into by other strategies, never clicked by the crawl
    ],
)


def _frontier(**site: object) -> Frontier:
    config = SiteConfig(name="shop", start_url=ORIGIN + "/", ignore_params=["sid"], **site)
    return Frontier(config, lambda url: normalize_url(url, ignore_params=("sid",), keep_fragment=config.keep_fragment))


def test_the_frontier_queues_in_scope_pages_once_and_returns_the_buttons():
    frontier = _frontier()
    buttons = frontier.take(HOME)
    assert list(frontier.queue) == [ORIGIN + "/c/jackets"]
    assert [b.name for b in buttons] == ["Reviews", "Open menu", "Size guide"]
    assert frontier.pop() == ORIGIN + "/c/jackets" and frontier.pop() is None
    assert frontier.take(HOME) == buttons and not frontier.queue  # seen pages are not queued again
    frontier.clicked.add(buttons[-1].key)
    assert [b.name for b in frontier.take(HOME)] == ["Reviews", "Open menu"]  # a clicked button is not returned


def test_a_site_that_keeps_fragments_crawls_anchors_as_pages():
    frontier = _frontier(keep_fragment=True)
    buttons = frontier.take(HOME)
    queued = [ORIGIN + "/c/jackets#top", ORIGIN + "/c/jackets?sid=7", ORIGIN + "/#reviews"]  # #top: another state
    assert list(frontier.queue) == queued
    assert [b.name for b in buttons] == ["Open menu", "Size guide"]
