"""`Engine.pick_node`, SCALE-Hop's choice of where a worker explores next, on the fixture run's graph:
n0 home (partial), n1 jackets (partial), n2 rain jacket, n3 jackets by price (unexplored), n4 size chart (full,
verified; its Close button leads to n0), n5 boots (partial)."""

from __future__ import annotations

import pytest

from explorer.loop import Engine
from explorer.store import resume
from explorer.tracker import StateTracker

OTHERS = {2: "n0", 3: "n1", 4: "n2", 5: "n3", 6: "n5"}  # other workers, each on another frontier node


@pytest.fixture
def engine(fixture_run):
    """An engine over the fixture run's graph (no browser, no model: pick_node needs neither)."""
    store, graph = resume(fixture_run.dir)
    cfg = store.explore_config()
    tracker = StateTracker(store, graph, delta=cfg.delta)
    yield Engine(fixture_run.site, cfg, tracker, model=None, similarity=None, budget=None, run_id="fixture-run")
    store.close()


@pytest.mark.parametrize(
    "current,claims,exhausted,picked",
    [
        ("n0", {}, set(), "n0"),  # still frontier and free: stay
        ("n0", {1: "n0"}, set(), "n0"),  # a worker's own claim does not keep it out
        ("n4", {}, set(), "n0"),  # full: the nearest frontier node, one action away
        ("n0", {2: "n0", 3: "n1"}, set(), "n5"),  # taken: walk one action rather than reload a page
        ("n0", {3: "n1"}, {"n0"}, "n5"),  # exhausted nodes are never picked again
        ("n0", OTHERS, set(), "n0"),  # every frontier node is taken: share this one rather than idle
        ("n4", OTHERS, {"n4"}, "n0"),  # ... or the nearest one
        ("n4", OTHERS, {"n0", "n1", "n2", "n3", "n4", "n5"}, None),  # nothing left at all: the frontier is empty
    ],
)
def test_pick_node(engine, current, claims, exhausted, picked):
    engine.claims.update(claims)
    engine.exhausted |= exhausted
    assert engine.pick_node(1, current) == picked


def test_an_unreachable_node_is_left(engine):
    engine.tracker.graph.update("n0", unreachable="the URL shows another state")
    engine.claims[2] = "n1"
    assert engine.pick_node(1, "n0") == "n5"
