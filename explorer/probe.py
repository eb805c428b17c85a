"""Search probes: submit a site's search field with words of its own pages before a strategy explores it.

Deep-web surfacing (Madhavan et al., "Google's Deep-Web Crawl", VLDB 2008): a crawler that only follows links
never sees the pages behind a search form, so it fills the form with keywords taken from the site's pages and
keeps the result pages; each result page's words feed the next queries (snowball). An explorer that picks one
element at a time rarely types at all (SCALE's Selector picked the search field once in 60 steps over the
bundled sites), so its datasets hold almost no search tasks. `ExploreConfig.search_probes` spends that many steps
of the run's budget here, for any strategy; they are committed as steps of kind `probe` (real transitions, in the
graph like any other), and a resumed run makes only the probes it still owes.
"""

from __future__ import annotations

import random
import re

from explorer.browser import BrowserSession
from explorer.budget import Budget
from explorer.candidates import is_text_field, search_words, usable_elements
from explorer.config import SiteConfig
from explorer.records import Action, Element, Observation
from explorer.tracker import StateTracker

_SEARCH = re.compile(r"\bsearch\b", re.IGNORECASE)


def search_field(obs: Observation, site: SiteConfig) -> Element | None:
    """The page's search field the policy allows: a searchbox, or a text field named for search."""
    for el in usable_elements(obs, site):
        if is_text_field(el) and (el.role == "searchbox" or _SEARCH.search(el.name) is not None):
            return el
    return None


async def probe_searches(
    site: SiteConfig, tracker: StateTracker, budget: Budget, session: BrowserSession, rng: random.Random, count: int
) -> int:
    """Submit the site's search field with up to `count` words of its pages, each word once (within the budget);
    returns the probes the run holds. Stops early on a site without a search field on its start page, or when no
    untried word is left, and a resumed run then makes no more (a run killed mid-way makes the ones it owes)."""
    store = tracker.store
    probes = [s for s in store.steps() if s.kind == "probe"]
    tried = {s.action.text for s in probes}
    if len(tried) >= count or store.meta().probes_done or budget.exhausted() is not None:
        return len(tried)
    step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
    node, obs, loaded = step.node_id, step.observation, step.outcome.ok
    words, at_start = dict.fromkeys(search_words(obs)), True
    for earlier in probes:  # a resumed run's result pages feed its words again
        found = tracker.graph.node(earlier.node_to) if earlier.node_to in tracker.graph.g else None
        if found is not None and found.observation:
            words.update(dict.fromkeys(search_words(store.observation(found.observation, screenshots=False))))
    while len(tried) < count and budget.exhausted() is None:
        field = search_field(obs, site)
        if field is None and not at_start:  # a result page without the field: from the start page again
            step = await tracker.act(session, Action(kind="goto", url=site.start_url), obs, node, kind="goto")
            node, obs, at_start = step.node_id, step.observation, True
            continue
        untried = [w for w in words if w not in tried]
        if field is None or not untried:  # the site has nothing (more) to probe: a resume will not look again
            store.set_meta("probes_done", loaded)  # unless the start page failed to load
            break
        word = rng.choice(untried)
        tried.add(word)
        action = Action.on(field, "type", text=word, press_enter=True)
        step = await tracker.act(session, action, obs, node, kind="probe")
        node, obs, at_start = step.node_id, step.observation, False
        words.update(dict.fromkeys(search_words(obs)))
    return len(tried)
