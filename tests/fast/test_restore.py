"""What a resumed SCALE engine rebuilds from the store besides the graph (explorer/restore.py), on the fixture
run: the Selector's novelty counts and the exhausted nodes."""

from __future__ import annotations

from explorer.candidates import usable_elements
from explorer.restore import exhausted_nodes, tried_kinds
from explorer.store import resume
from tests.fast.conftest import STEPS


def test_novelty_counts_come_back_from_the_selector_picks(fixture_run):
    store, _ = resume(fixture_run.dir)
    try:
        kinds = tried_kinds(store.steps())
    finally:
        store.close()
    picks = [s for s in STEPS if s.at is not None and s.kind is None]  # the Selector's steps of the fixture
    assert sum(kinds.values()) == len(picks)
    assert kinds["link:jackets"] == 1 and kinds["button:size guide"] == 1 and kinds["link:home"] == 1
    assert "button:close" not in kinds  # a verification step is no Selector pick


def test_a_verified_node_with_nothing_left_to_try_is_exhausted_again(fixture_run):
    store, graph = resume(fixture_run.dir)
    try:
        steps = store.steps()
        chart = next(s.node_from for s in steps if s.kind == "verify")  # the size chart, verified once
        assert exhausted_nodes(store, graph, fixture_run.site, steps) == set()  # home's controls are untried there
        node = graph.node(chart)
        usable = usable_elements(store.observation(node.observation), fixture_run.site)
        graph.update(chart, tried=[e.key for e in usable])
        assert exhausted_nodes(store, graph, fixture_run.site, steps) == {chart}
        others = [n for n in graph.nodes() if n.id != chart and n.observation]
        spent = others[0]  # never verified: SCALE's rule leaves it, the greedy walk's rule (verified=False) takes it
        graph.update(
            spent.id, tried=[e.key for e in usable_elements(store.observation(spent.observation), fixture_run.site)]
        )
        assert exhausted_nodes(store, graph, fixture_run.site, steps) == {chart}
        assert exhausted_nodes(store, graph, fixture_run.site, steps, verified=False) >= {chart, spent.id}
    finally:
        store.close()
