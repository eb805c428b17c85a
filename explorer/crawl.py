"""The `bfs` strategy: a breadth-first URL-frontier crawl, as Scrapy or Crawlee crawl a site, that also clicks the
buttons a crawler cannot follow.

Each page is loaded once, by a `goto` step. Its in-scope links go to the back of a FIFO frontier (one entry per
URL as the run normalizes it: no fragment, no ignored parameters), and its buttons (every clickable element that is
not a link to another page) are clicked in order, going back to the page's URL after a click that left the page
or hid the next button. A button is clicked once per run: one that many pages share (the same element key: place,
role and name, like a header's Search) only on the first page that shows it, as a crawler fetches each URL once.
Links and buttons are the ones `usable_elements` allows, so the site's policy and scope apply as in every other
strategy. The crawl ends when the frontier is empty or a budget is used up.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from urllib.parse import urldefrag, urlsplit

from explorer.browser import BrowserSession
from explorer.candidates import CLICKABLE, usable_elements
from explorer.config import SiteConfig
from explorer.records import Action, Element, Observation
from explorer.tracker import StateTracker, Step

_PAGE_SCHEMES = ("http", "https", "file")  # links with another scheme (javascript:, data:) are buttons


class Frontier:
    """Pages to load, first found first; each normalized URL is queued or loaded at most once."""

    def __init__(self, site: SiteConfig, normalize: Callable[[str], str]):
        self.site = site
        self.normalize = normalize
        self.queue: deque[str] = deque()
        self.seen: set[str] = set()  # queued or reached
        self.clicked: set[str] = set()  # element keys of the buttons clicked

    @classmethod
    def rebuilt(cls, site: SiteConfig, tracker: StateTracker) -> Frontier:
        """The frontier of a resumed crawl, replayed from its stored steps in order: every page a step loaded is
        reached (and off the queue), every button it clicked is clicked, and the links of every state it reached
        are queued as they were first seen. A resume goes on with the next page instead of starting over; a page
        whose buttons the kill interrupted is loaded again first, for the buttons it has left."""
        normalize, store, graph = tracker.normalize, tracker.store, tracker.graph
        frontier = cls(site, normalize)
        frontier.seen.add(normalize(site.start_url))
        page: tuple[str, list[Element]] | None = None  # the page last loaded, and its buttons
        for step in store.steps():
            action = step.action
            if action.kind == "click" and action.element_key:
                frontier.clicked.add(action.element_key)
            node = graph.node(step.node_to) if step.node_to and step.node_to in graph.g else None
            seen = store.observation(node.observation, screenshots=False) if node and node.observation else None
            found = frontier.take(seen) if seen else []
            if action.kind == "goto" and action.url:
                key = normalize(action.url)
                frontier.seen.add(key)
                frontier.queue = deque(u for u in frontier.queue if normalize(u) != key)
                page = (action.url, found) if step.kind != "return" else page
        if page and normalize(page[0]) != normalize(site.start_url):  # the start page is loaded first anyway
            if any(b.key not in frontier.clicked for b in page[1]):
                frontier.queue.appendleft(page[0])
        return frontier

    def page_link(self, element: Element, page_url: str) -> str | None:
        """The URL `element` links to when it is another page (fragment dropped unless the site keeps it)."""
        href = element.href
        if not href or urlsplit(href).scheme not in _PAGE_SCHEMES:
            return None
        if self.site.keep_fragment:
            return href
        target = urldefrag(href).url
        if "#" in href and target == urldefrag(page_url).url:
            return None  # an in-page anchor (a tab, a section): clicked like a button
        return target

    def take(self, obs: Observation) -> list[Element]:
        """Queue the unseen pages `obs` links to, count its own URL as reached; return its unclicked buttons."""
        self.seen.add(self.normalize(obs.url))
        buttons = []
        for element in usable_elements(obs, self.site):
            url = self.page_link(element, obs.url)
            if url is None:
                if element.role in CLICKABLE and element.key not in self.clicked:
                    buttons.append(element)
            elif (key := self.normalize(url)) not in self.seen:
                self.seen.add(key)
                self.queue.append(url)
        return buttons

    def pop(self) -> str | None:
        """The next page to load, or None when the frontier is empty."""
        return self.queue.popleft() if self.queue else None


async def bfs_worker(
    site: SiteConfig, tracker: StateTracker, budget, session: BrowserSession, rng: random.Random
) -> None:
    """Crawl breadth-first: load each frontier page by `goto`, then click its buttons, until nothing is left."""
    if tracker.next_step:  # resumed: the pages loaded, the buttons clicked and the queue as the last run left them
        frontier = Frontier.rebuilt(site, tracker)
    else:
        frontier = Frontier(site, tracker.normalize)
        frontier.seen.add(tracker.normalize(site.start_url))
    step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
    while True:
        buttons = frontier.take(step.observation)
        if step.outcome.ok and buttons:
            step = await _click_buttons(step, buttons, frontier, tracker, budget, session)
        if budget.exhausted() is not None:
            return
        url = frontier.pop()
        if url is None:
            budget.stop("frontier empty")
            return
        step = await tracker.act(session, Action(kind="goto", url=url), step.observation, step.node_id, kind="goto")


async def _click_buttons(
    page: Step, buttons: list[Element], frontier: Frontier, tracker: StateTracker, budget, session: BrowserSession
) -> Step:
    """Click each button of the page once, found again by key on the page as the last click left it; the page is
    reloaded by URL when a click left it (another URL) or hid the next button (a dialog, a rewritten region).
    Pages that clicks reach have their links queued. Returns the last step."""
    url, home, step = page.observation.url, page.node_id, page
    for key in [b.key for b in buttons]:
        if budget.exhausted() is not None:
            break
        on_page = tracker.normalize(step.observation.url) == tracker.normalize(url)
        element = _find(step.observation, key) if on_page else None
        if element is None and step.node_id != home:
            back = Action(kind="goto", url=url)
            step = await tracker.act(session, back, step.observation, step.node_id, kind="return")
            home = step.node_id  # the page as it is now (a click may have changed it for good, e.g. a cart count)
            if budget.exhausted() is not None:
                break
            element = _find(step.observation, key)
        if element is None or key in frontier.clicked:
            continue
        frontier.clicked.add(key)
        step = await tracker.act(session, Action.on(element), step.observation, step.node_id)
        frontier.take(step.observation)
    return step


def _find(obs: Observation, key: str) -> Element | None:
    return next((e for e in obs.elements if e.key == key), None)
