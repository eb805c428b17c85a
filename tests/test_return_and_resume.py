"""Return-to-node on same-URL states, a SIGKILLed exploration (SCALE or random) that resumes without loss, and a
site that goes down mid-run: the run stops, says how to resume, and resumes once the site is back."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

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
    """The rows of a table as they are on disk (read-only, in insertion order)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


def _accounting(db: Path) -> dict:
    """The run's accounting as the meta table holds it."""
    meta = {k: json.loads(v) for k, v in _rows(db, "meta")}
    return {k: meta.get(k, {} if k in ("roles", "timings") else 0) for k in ("tokens", "seconds", "timings", "roles")}


def _holds(db: Path, table: str, minimum: int) -> bool:
    """Whether the run file holds `minimum` rows of `table` yet (False while it is being created)."""
    try:
        return db.exists() and len(_rows(db, table)) >= minimum
    except sqlite3.OperationalError:  # the child has not created the tables yet
        return False


def _explore(url: str, runs: Path, strategy: str, seed: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "explore", url, "--strategy", strategy, "--runs-dir", str(runs),
            "--seed", str(seed), *extra]  # fmt: skip


# strategy, site, seed, (table, rows it holds before the kill), steps to add on resume (the random walk's kills
# and resumes are tests/test_chaos.py's); node and edge records are
# updated in place (visits, tried, status; an edge's count): their rows keep their ids, the other tables are
# insert-only. A SCALE return replays stored edges, so its edges may count up after the resume.
KILLED = [
    pytest.param("scale", "forum", 2, ("records", 2), 4, ("nodes", "edges"), id="scale"),
]


@pytest.mark.parametrize("strategy,site,seed,ready,more,in_place", KILLED)
def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(
    site_urls, tmp_path, strategy, site, seed, ready, more, in_place
):
    """SIGKILL an exploration mid-run (SCALE with the embedded model, or the random walk); the graph rebuilt from
    what was committed equals the store, and the resumed run keeps every committed row."""
    db = tmp_path / "k" / "run.sqlite"
    url, (table, minimum) = site_urls[site], ready
    child = subprocess.Popen(
        _explore(url, tmp_path, strategy, seed, "--run-id", "k", "--steps", "500"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not _holds(db, table, minimum):
        assert child.poll() is None, child.stderr.read()
        time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    before = {t: _rows(db, t) for t in ("steps", "nodes", "edges", "records", "events")}
    spent = _accounting(db)  # written with each step: the kill loses none of it
    assert spent["seconds"] > 0 and spent["timings"].get("store", 0) > 0
    if strategy == "scale":
        assert spent["tokens"] > 0 and spent["roles"]["predictor"]["calls"] > 0
    n = len(before["steps"])
    assert [row[0] for row in before["steps"]] == list(range(n))  # contiguous: no gap, no duplicate
    assert len(before[table]) >= minimum
    store, graph = resume(tmp_path / "k")
    assert {node.id for node in graph.nodes()} == {row[0] for row in before["nodes"]}  # the graph equals the store
    assert len(graph.edges()) == len(before["edges"])
    assert {row[2] for row in before["steps"]} <= {node.id for node in graph.nodes()}
    assert all(store.blob_path(node.screenshot).exists() for node in graph.nodes())
    store.close()

    resumed = subprocess.run(
        _explore(url, tmp_path, strategy, seed, "--resume", "k", "--steps", str(n + more), "--json"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr
    printed = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert printed["steps"] == n + more
    # the summary carries the accounting of both parts: per-role counts and seconds by part
    assert printed["roles"]["predictor"]["calls"] >= spent["roles"]["predictor"]["calls"]
    assert set(printed["roles"]["predictor"]) >= {"calls", "constrained", "repairs", "fallbacks"}
    assert printed["seconds_by_part"]["store"] >= spent["timings"]["store"]
    after = {t: _rows(db, t) for t in before}
    assert [row[0] for row in after["steps"]] == list(range(n + more))
    total = _accounting(db)  # the resumed part adds to the killed one's accounting, never replaces it
    assert total["seconds"] > spent["seconds"] and total["tokens"] >= spent["tokens"]
    for role, counts in spent.get("roles", {}).items():
        assert total["roles"][role]["calls"] >= counts["calls"]
    for name, rows in before.items():
        if name in in_place:
            assert [r[0] for r in after[name][: len(rows)]] == [r[0] for r in rows]
        else:
            assert after[name][: len(rows)] == rows  # committed rows are untouched by the resume
    assert {row[0] for row in after["nodes"]} >= {row[2] for row in before["steps"]}  # every reached node is kept


class _Pages(BaseHTTPRequestHandler):
    """Ten pages, each linking every other: enough for a random walk to keep clicking."""

    def do_GET(self) -> None:
        n = self.path.strip("/") or "0"
        links = "".join(f'<a href="/{k}">Page {k}</a> ' for k in range(10) if str(k) != n)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(f"<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1>{links}".encode())

    def log_message(self, *args) -> None:
        pass


def _serve(port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_site_that_goes_down_mid_run_stops_it_and_the_run_resumes_later(tmp_path):
    server = _serve()
    port = server.server_port
    url, db = f"http://127.0.0.1:{port}/", tmp_path / "d" / "run.sqlite"
    child = subprocess.Popen(
        _explore(url, tmp_path, "random", 0, "--run-id", "d", "--steps", "300"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _holds(db, "steps", 4):
        assert child.poll() is None, child.stderr.read()
        time.sleep(0.1)
    server.shutdown()
    server.server_close()
    _, err = child.communicate(timeout=120)
    assert child.returncode == 2, err
    assert "stopped answering (site down: 5 steps in a row could not reach it)" in err
    assert "--resume d" in err and "Traceback" not in err
    steps = _rows(db, "steps")
    assert 4 <= len(steps) < 300  # it stopped on its own, long before its budget
    assert all("net::ERR_" in row[4] for row in steps[-5:])  # the five failed steps are kept (refused, reset...)

    server = _serve(port)  # the site is back
    try:
        resumed = subprocess.run(
            _explore(url, tmp_path, "random", 0, "--resume", "d", "--steps", str(len(steps) + 3), "--json"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["steps"] == len(steps) + 3
