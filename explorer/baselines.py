"""Baseline strategies in the same engine (same tracker, dedup, store and budgets), for side-by-side numbers:
a uniform random walk, a click-and-return breadth-first walk over links and buttons (`bfs-click`), and a
novelty-greedy walk (untried elements first, rarest kind first, as in OS-Genesis's weighted walk). The URL-frontier
crawl (`bfs`) is explorer/crawl.py. None of them needs a model."""

from __future__ import annotations

import random
from collections import Counter, deque

from explorer.browser import BrowserSession
from explorer.candidates import CLICKABLE, action_for, usable_elements
from explorer.config import SiteConfig
from explorer.novelty import rank_candidates, signature
from explorer.records import Action, Observation
from explorer.restore import exhausted_nodes, tried_kinds
from explorer.returning import return_to


def random_step(obs: Observation, site: SiteConfig, rng: random.Random) -> Action:
    """The uniform random walk's next action: any usable element, or back to the start when stuck."""
    elements = usable_elements(obs, site)
    if not elements:
        return Action(kind="goto", url=site.start_url)
    return action_for(rng.choice(elements), rng, obs)


async def random_worker(site: SiteConfig, tracker, budget, session: BrowserSession, rng: random.Random) -> None:
    """Uniform random walk until a budget ends."""
    step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
    while budget.exhausted() is None:
        action = random_step(step.observation, site, rng)
        kind = "goto" if action.kind == "goto" else "select"
        step = await tracker.act(session, action, step.observation, step.node_id, kind=kind)


async def bfs_click_worker(site: SiteConfig, tracker, budget, session: BrowserSession, rng: random.Random) -> None:
    """Breadth-first over (state, clickable element) pairs: return to the state, click, enqueue new states."""
    step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
    queue: deque[tuple[str, str]] = deque()

    def enqueue(node: str, obs: Observation) -> None:
        queue.extend((node, el.key) for el in usable_elements(obs, site) if el.role in CLICKABLE)

    enqueue(step.node_id, step.observation)
    node, obs = step.node_id, step.observation
    while queue and budget.exhausted() is None:
        target, key = queue.popleft()
        if target != node:
            back = await return_to(session, tracker, target, obs)
            if back.steps:
                node, obs = back.steps[-1].node_id, back.steps[-1].observation
            if not back.ok:
                continue
            node, obs = target, back.observation
        element = next((e for e in obs.elements if e.key == key), None)
        if element is None:
            continue
        step = await tracker.act(session, Action.on(element), obs, node)
        if step.new_node:
            enqueue(step.node_id, step.observation)
        node, obs = step.node_id, step.observation


async def greedy_worker(site: SiteConfig, tracker, budget, session: BrowserSession, rng: random.Random) -> None:
    """Novelty-greedy: an untried element of the rarest kind here; when none is left, the nearest state with one."""
    graph = tracker.graph
    kinds: Counter = Counter()
    exhausted: set[str] = set()  # nodes whose untried elements are all unusable (forbidden, out of scope)
    if tracker.next_step:  # a resumed walk knows its novelty counts and its spent nodes again
        steps = tracker.store.steps()
        kinds.update(tried_kinds(steps))
        exhausted |= exhausted_nodes(tracker.store, graph, site, steps, verified=False)
    step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
    node, obs = step.node_id, step.observation
    while budget.exhausted() is None:
        tried = set(graph.node(node).tried)
        untried = [e for e in usable_elements(obs, site) if e.key not in tried]
        if not untried:
            exhausted.add(node)
            target = _nearest_with_untried(graph, node, exhausted)
            if target is None:
                budget.stop("nothing left to try")
                return
            back = await return_to(session, tracker, target, obs)
            if back.steps:
                node, obs = back.steps[-1].node_id, back.steps[-1].observation
            if back.ok:
                node, obs = target, back.observation
            continue
        element = rank_candidates(untried, kinds, rng)[0]
        kinds[signature(element)] += 1
        step = await tracker.act(session, action_for(element, rng, obs), obs, node)
        node, obs = step.node_id, step.observation


def _nearest_with_untried(graph, current: str, exhausted: set[str]) -> str | None:
    """The reachable node closest to `current` that still has untried elements (fewest actions)."""
    best = None
    for n in graph.nodes():
        if n.unreachable is not None or n.id in exhausted or not set(n.element_keys) - set(n.tried):
            continue
        cost = graph.return_cost(n.id)
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, n.id)
    return best[1] if best else None
