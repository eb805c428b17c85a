"""Live progress of long stages, read from the files they write: a run's run.sqlite (steps, failures), an
evaluation's results/ (tasks done of eval.json's), a training's checkpoints/progress.json (step, loss). A thread
prints one line every `every` seconds naming what moved under a folder, so a terminal and a piped log both see
it, whichever process or Prefect task does the work."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

SKIP = {"blobs", "hf", "parquet", "screenshots"}  # content folders: never walked


def _run_status(db: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            steps = conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
            failures = conn.execute("SELECT COUNT(*) FROM records WHERE kind = 'failure'").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # being created
    return f"{steps} steps, {failures} failures"


def _eval_status(folder: Path) -> str | None:
    try:
        total = len(json.loads((folder / "eval.json").read_text()).get("task_ids", []))
    except (OSError, ValueError):
        return None
    done = len(list((folder / "results").glob("*.json")))
    return f"{done}/{total} tasks"


def _train_status(file: Path) -> str | None:
    try:
        p = json.loads(file.read_text())
        return f"training step {p['step']}/{p['max_steps']}, loss {p['loss']:.3f}"
    except (OSError, ValueError, KeyError, TypeError):
        return None  # finished (the folder is gone) or being written


def snapshot(root: str | Path) -> dict[str, str]:
    """The status of every run, evaluation and training under `root`, keyed by its folder relative to `root`."""
    root = Path(root)
    out: dict[str, str] = {}
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        folder = Path(here)
        status = None
        if "run.sqlite" in files:
            status = _run_status(folder / "run.sqlite")
        elif "eval.json" in files:
            status = _eval_status(folder)
        elif folder.name == "checkpoints" and "progress.json" in files:
            status, folder = _train_status(folder / "progress.json"), folder.parent
        if status is not None:
            out[str(folder.relative_to(root))] = status
    return out


class Heartbeat:
    """While open, prints `say(line)` every `every` seconds with what moved under `root` since the last line
    (nothing when nothing moved)."""

    def __init__(self, root: str | Path, say: Callable[[str], None] = print, every: float = 20.0) -> None:
        self.root, self.say, self.every = Path(root), say, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        self._last: dict[str, str] = {}

    def __enter__(self) -> Heartbeat:
        self._last = snapshot(self.root) if self.root.exists() else {}
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            if line := self.moved():
                self.say(line)

    def moved(self) -> str:
        """One line of what changed under the folder since the last call ('' when nothing did)."""
        now = snapshot(self.root) if self.root.exists() else {}
        moved = [f"{k}: {v}" for k, v in now.items() if self._last.get(k) != v]
        self._last = now
        return "  " + "; ".join(moved) if moved else ""
