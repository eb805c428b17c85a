"""The SCALE-Hop graph and the crash-safe store: statuses, queries, export, atomic steps, refusals."""

from __future__ import annotations

import sqlite3

import networkx as nx
import pytest

from explorer.graph import ExplorationGraph, next_status
from explorer.records import Action, Node
from explorer.store import RunStore, StoreError, resume


def node(i: int, url: str = "http://a.test/", **kw) -> Node:
    """Node `n<i>` at `url` (a placeholder screenshot hash)."""
    return Node(id=f"n{i}", url=url, raw_url=url, screenshot="0" * 64, **kw)


def click(key: str) -> Action:
    """A click on the button whose element key is `key`."""
    return Action(kind="click", element_key=key, label=f'button "{key}"')


@pytest.mark.parametrize(
    "status,event,after",
    [
        ("unexplored", "tried", "partial"),
        ("partial", "verified", "full"),
        ("partial", "refuted", "partial"),
        ("full", "refuted", "partial"),
        ("full", "tried", "full"),
    ],
)
def test_status_transitions(status, event, after):
    assert next_status(status, event) == after


def test_an_unknown_status_event_is_refused():
    with pytest.raises(ValueError, match="bogus"):
        next_status("partial", "bogus")


def small_graph() -> ExplorationGraph:
    """n0 -> n1 -> n2 (n2 a same-URL modal state), n0 -> n3; n1 full."""
    g = ExplorationGraph()
    g.add_node(node(0, addressable=True, status="partial"))
    g.add_node(node(1, "http://a.test/t/1", status="full"))
    g.add_node(node(2, "http://a.test/t/1", addressable=False))
    g.add_node(node(3, "http://a.test/b"))
    g.add_edge("n0", "n1", click("open"))
    g.add_edge("n1", "n2", click("reply"))
    g.add_edge("n0", "n3", click("b"))
    g.add_edge("n0", "n3", click("b"))
    return g


def test_queries():
    g = small_graph()
    assert [n.id for n in g.nodes_of_url("http://a.test/t/1")] == ["n1", "n2"]
    assert [e.action.element_key for e in g.action_path("n0", "n2")] == ["open", "reply"]
    assert g.action_path("n2", "n0") is None
    assert [n.id for n in g.frontier()] == ["n0", "n2", "n3"]
    assert g.return_cost("n2") == 2  # goto n1, then one action
    assert [e.count for e in g.edges() if e.dst == "n3"] == [2]  # the repeated action counted up
    target, path = g.nearest_frontier("n1")
    assert target.id == "n2" and [e.action.element_key for e in path] == ["reply"]
    g.update("n2", unreachable="gone")
    target, _ = g.nearest_frontier("n1")
    assert target.id in ("n0", "n3")


def test_export_node_link_and_graphml(tmp_path):
    g = small_graph()
    link, graphml = g.export(tmp_path)
    back = nx.read_graphml(graphml)
    assert set(back.nodes) == {"n0", "n1", "n2", "n3"} and back.nodes["n1"]["status"] == "full"
    assert back.edges["n0", "n3"]["count"] == 2
    data = nx.node_link_graph(__import__("json").loads(link.read_text()), edges="edges")
    assert set(data.edges) == set(g.g.edges)


def test_store_round_trip_and_atomic_steps(tmp_path):
    store = RunStore.create(tmp_path, "r1", {"strategy": "test"})
    g = small_graph()
    with store.step(0) as tx:
        for n in g.nodes():
            tx.node(n)
        for e in g.edges():
            tx.edge(e)
        rid = tx.record("failure", {"x": 1}, "n0", "n1")
        tx.action("n0", "n1", click("open").model_dump(mode="json"), {"ok": True})
    with pytest.raises(RuntimeError), store.step(1) as tx:
        tx.node(node(9))
        tx.record("failure", {"x": 2})
        raise RuntimeError("killed mid-step")
    assert store.count("nodes") == 4 and store.count("records") == 1 and rid == "0-0"
    assert store.last_step() == 0
    store.close()
    reopened, graph = resume(tmp_path / "r1")
    assert {n.id: n for n in graph.nodes()} == {n.id: n for n in g.nodes()}
    assert sorted(e.key for e in graph.edges()) == sorted(e.key for e in g.edges())
    assert reopened.meta().strategy == "test"
    with pytest.raises(StoreError, match="already holds a run"):
        RunStore.create(tmp_path, "r1")


def test_blobs_are_content_addressed(tmp_path):
    store = RunStore.create(tmp_path, "r")
    h1 = store.put_blob(b"png-bytes")
    assert store.put_blob(b"png-bytes") == h1 and store.blob(h1) == b"png-bytes"
    assert store.blob_path(h1).parent.name == h1[:2]


def test_corrupt_and_foreign_files_are_refused(tmp_path):
    corrupt = tmp_path / "bad"
    corrupt.mkdir()
    (corrupt / "run.sqlite").write_bytes(b"this is not a database at all" * 10)
    with pytest.raises(StoreError, match="not a SQLite database"):
        resume(corrupt)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    conn = sqlite3.connect(foreign / "run.sqlite")
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="another program"):
        resume(foreign)
    with pytest.raises(StoreError, match="holds no run"):
        resume(tmp_path / "missing")
