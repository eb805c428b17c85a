"""Return-to-node on same-URL states, and a SIGKILLed exploration that resumes without loss."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from explorer.dedup import DEFAULT_DELTA
from explorer.records import Action
from explorer.returning import return_to
from explorer.store import RunStore, resume
from explorer.tracker import StateTracker

ROOT = Path(__file__).resolve().parents[1]


def goto(url: str) -> Action:
    return Action(kind="goto", url=url)


async def test_return_to_a_modal_state_by_replay_and_verify(open_session, site_urls, tmp_path):
    forum = site_urls["forum"]
    session = await open_session("forum")
    store = RunStore.create(tmp_path, "r")
    tracker = StateTracker(store, store.load_graph(), delta=DEFAULT_DELTA)
    graph = tracker.graph
    thread = await tracker.act(session, goto(forum + "t/1"), None, None)
    reply = next(e for e in thread.observation.elements if e.name == "Reply")
    modal = await tracker.act(session, Action.on(reply), thread.observation, thread.node_id)
    assert modal.new_node and graph.node(modal.node_id).url == graph.node(thread.node_id).url
    assert graph.node(modal.node_id).addressable is False  # a same-URL state: the URL alone won't do
    away = await tracker.act(session, goto(forum), None, None)
    assert away.node_id not in (thread.node_id, modal.node_id)

    result = await return_to(session, tracker, modal.node_id, away.observation)
    assert result.ok, result.reason
    assert result.route == f"replay from {thread.node_id} (1 actions)"
    assert tracker.identify(result.observation).node_id == modal.node_id
    assert any(e.name == "Post reply" for e in result.observation.elements)  # the modal really is open

    back = await return_to(session, tracker, thread.node_id, result.observation)
    assert back.ok and back.route == "goto"
    assert graph.node(thread.node_id).addressable is True


async def test_unreachable_node_is_marked_with_a_reason(open_session, site_urls, tmp_path):
    forum = site_urls["forum"]
    session = await open_session("forum")
    store = RunStore.create(tmp_path, "r")
    tracker = StateTracker(store, store.load_graph(), delta=DEFAULT_DELTA)
    thread = await tracker.act(session, goto(forum + "t/2"), None, None)
    reply = next(e for e in thread.observation.elements if e.name == "Reply")
    modal = await tracker.act(session, Action.on(reply), thread.observation, thread.node_id)
    edge = tracker.graph.edges()[0]
    broken = edge.model_copy(update={"action": edge.action.model_copy(update={"element_key": "gone"})})
    tracker.graph.g.edges[thread.node_id, modal.node_id]["actions"] = {broken.key: broken}
    away = await tracker.act(session, goto(forum), None, None)
    result = await return_to(session, tracker, modal.node_id, away.observation)
    assert not result.ok and "element not on the page" in result.reason
    store.close()
    _, graph = resume(tmp_path / "r")
    assert "element not on the page" in graph.node(modal.node_id).unreachable
    assert modal.node_id not in [n.id for n in graph.frontier()]


def _rows(db: Path, table: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        order = "step" if table == "steps" else "rowid"
        return conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
    finally:
        conn.close()


def _explore(url: str, runs: Path, *extra: str) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "flows.cli",
        "explore",
        url,
        "--strategy",
        "random",
        "--runs-dir",
        str(runs),
        "--seed",
        "3",
    ]
    cmd += extra
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(site_urls, tmp_path):
    db = tmp_path / "k" / "run.sqlite"
    child = _explore(site_urls["shop"], tmp_path, "--run-id", "k", "--steps", "500")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if db.exists() and len(_rows(db, "steps")) >= 12:
            break
        assert child.poll() is None, child.stderr.read()
        time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    before = {t: _rows(db, t) for t in ("steps", "nodes", "edges", "events")}
    steps = [row[0] for row in before["steps"]]
    assert steps == list(range(len(steps))) and len(steps) >= 12  # contiguous: no gap, no duplicate
    store, graph = resume(tmp_path / "k")
    assert {n.id for n in graph.nodes()} == {row[0] for row in before["nodes"]}  # the graph equals the store
    assert len(graph.edges()) == len(before["edges"])
    assert {row[2] for row in before["steps"]} <= {n.id for n in graph.nodes()}
    assert all(store.blob_path(n.screenshot).exists() for n in graph.nodes())
    store.close()

    more = _explore(site_urls["shop"], tmp_path, "--resume", "k", "--steps", str(len(steps) + 6))
    assert more.wait(300) == 0, more.stderr.read()
    after = {t: _rows(db, t) for t in before}
    assert [row[0] for row in after["steps"]] == list(range(len(steps) + 6))
    for table, rows in before.items():
        if table == "nodes":  # node records are updated in place (visits, tried, status)
            assert [r[0] for r in after[table][: len(rows)]] == [r[0] for r in rows]
        else:
            assert after[table][: len(rows)] == rows  # committed rows are untouched by the resume
