"""Live progress read from the files long stages write (flows.progress): a run's steps, an evaluation's tasks, a
training's step; a heartbeat line names only what moved."""

from __future__ import annotations

import json
import time

from explorer.store import RunStore
from flows.progress import Heartbeat, snapshot


def test_snapshot_reads_runs_evaluations_and_training(tmp_path):
    store = RunStore.create(tmp_path / "explore", "shop")
    with store.step(0) as w:
        w.action(None, "n0", {"kind": "goto"}, {"ok": True})
    with store.step(1) as w:
        w.action("n0", "n1", {"kind": "click"}, {"ok": True})
        w.record("failure", {"x": 1})
    evald = tmp_path / "evals" / "before" / "bundled-shop-dev"
    (evald / "results").mkdir(parents=True)
    (evald / "eval.json").write_text(json.dumps({"task_ids": ["a", "b", "c"]}))
    (evald / "results" / "a.json").write_text("{}")
    ckpt = tmp_path / "adapters" / "round-1" / "checkpoints"
    ckpt.mkdir(parents=True)
    (ckpt / "progress.json").write_text(json.dumps({"step": 4, "max_steps": 10, "loss": 1.23456}))
    (tmp_path / "explore" / "shop" / "blobs" / "deep").mkdir(parents=True)  # content folders are not walked
    assert snapshot(tmp_path) == {
        "explore/shop": "2 steps, 1 failures",
        "evals/before/bundled-shop-dev": "1/3 tasks",
        "adapters/round-1": "training step 4/10, loss 1.235",
    }
    beat = Heartbeat(tmp_path)
    beat._last = snapshot(tmp_path)
    assert beat.moved() == ""  # nothing moved since
    (evald / "results" / "b.json").write_text("{}")
    assert beat.moved() == "  evals/before/bundled-shop-dev: 2/3 tasks"


def test_heartbeat_prints_what_moved_while_open(tmp_path):
    lines: list[str] = []
    evald = tmp_path / "e"
    (evald / "results").mkdir(parents=True)
    (evald / "eval.json").write_text(json.dumps({"task_ids": ["a", "b"]}))
    with Heartbeat(tmp_path, lines.append, every=0.05):
        (evald / "results" / "a.json").write_text("{}")
        deadline = time.time() + 5
        while not lines and time.time() < deadline:
            time.sleep(0.02)
    assert lines == ["  e: 1/2 tasks"]
