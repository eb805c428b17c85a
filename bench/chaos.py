"""Chaos: SIGKILL an exploration at random moments, resume it after each kill, and check after every kill that
nothing committed was lost or duplicated.

The run is `scalehop explore` in a child process against a bundled site served by this process. After each kill
the run folder is checked:
- steps are contiguous from 0 (no gap, no duplicate);
- every record and every step committed before the previous kill is still there, unchanged;
- every node's screenshot, its observation JSON and the observation's screenshots are in blobs/;
- the accounting (tokens, seconds) never goes backwards.
A last resume runs to a step budget and must exit 0. A table prints one row per kill. Then (unless
--no-compare) an uninterrupted run of the same seed and step count runs, and its summary counts print beside the
killed run's: what the kills changed, within the run-to-run spread (a resume re-seeds the strategy's random
generator from the seed and the step number, restarts at the start URL, and redoes the step a kill interrupted,
so the two runs take different paths after the first kill).

    .venv/bin/python bench/chaos.py                                   # 20 kills of a SCALE run (minutes)
    .venv/bin/python bench/chaos.py --kills 3 --strategy random       # what tests/test_chaos.py runs
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # the repo root, not bench/

from bench.common import print_table  # noqa: E402
from explorer.store import resume  # noqa: E402
from explorer.summary import RunMetrics  # noqa: E402
from sites import serve_sites  # noqa: E402


@dataclass
class Snapshot:
    """What a killed run holds: its steps and records (rows as stored) and its accounting."""

    steps: list[tuple]
    records: dict[str, tuple]
    nodes: int
    tokens: int
    seconds: float


def _rows(db: Path, sql: str) -> list[tuple]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # the child had not created the tables yet
        return []
    finally:
        conn.close()


def snapshot(run: Path) -> Snapshot:
    """The run as it is on disk."""
    db = run / "run.sqlite"
    meta = {k: json.loads(v) for k, v in _rows(db, "SELECT key, value FROM meta")}
    return Snapshot(
        steps=_rows(db, "SELECT step, node_from, node_to, action, outcome FROM steps ORDER BY step"),
        records={r[0]: r for r in _rows(db, "SELECT id, step, kind, node_from, node_to, payload FROM records")},
        nodes=len(_rows(db, "SELECT id FROM nodes")),
        tokens=int(meta.get("tokens", 0)),
        seconds=float(meta.get("seconds", 0.0)),
    )


def problems(run: Path, now: Snapshot, before: Snapshot) -> list[str]:
    """What is wrong with the run after a kill, compared with the snapshot after the kill before."""
    out = []
    numbers = [s[0] for s in now.steps]
    if numbers != list(range(len(numbers))):
        out.append(f"steps not contiguous: {numbers[:5]}...{numbers[-5:]}")
    if now.steps[: len(before.steps)] != before.steps:
        out.append("a step committed before the last kill changed or went missing")
    lost = [rid for rid, row in before.records.items() if now.records.get(rid) != row]
    if lost:
        out.append(f"{len(lost)} records lost or changed, e.g. {lost[0]}")
    if now.tokens < before.tokens or now.seconds < before.seconds:
        spent = f"{before.tokens}->{now.tokens} tokens, {before.seconds:.1f}->{now.seconds:.1f} s"
        out.append(f"accounting went backwards: {spent}")
    if (run / "run.sqlite").exists():
        store, graph = resume(run)
        try:
            for node in graph.nodes():
                blobs = [(node.screenshot, ".png")]
                if node.observation:
                    blobs.append((node.observation, ".json"))
                    if store.blob_path(node.observation, ".json").exists():
                        fields = json.loads(store.blob(node.observation, ".json"))
                        blobs += [(fields["screenshot"], ".png"), (fields["som_screenshot"], ".png")]
                missing = [d for d, suffix in blobs if not store.blob_path(d, suffix).exists()]
                if missing:
                    out.append(f"node {node.id}: blob {missing[0]} missing")
        finally:
            store.close()
    return out


def _explore(url: str, runs: Path, strategy: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "explore", url, "--strategy", strategy, "--runs-dir", str(runs),
            "--seed", "0", *extra]  # fmt: skip


def chaos(kills: int, strategy: str, site: str, seed: int, runs: Path, max_wait: float) -> tuple[list, list[str]]:
    """Kill and resume a run `kills` times, then finish it: (table rows, problems found)."""
    rng = random.Random(seed)
    servers = serve_sites(port=0, slow_seconds=5)
    rows, found = [], []
    try:
        url, run = servers.urls[site], runs / "chaos"
        before = snapshot(run)
        for k in range(kills):
            extra = ("--resume", "chaos") if (run / "run.sqlite").exists() else ("--run-id", "chaos")
            child = subprocess.Popen(_explore(url, runs, strategy, *extra, "--steps", "100000"), cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            # wait for the resume's start step and 0-2 more committed steps, then kill at a random instant (a
            # SCALE step takes seconds: the kill lands in a model call, the browser action or the commit)
            deadline = time.monotonic() + max_wait
            target = len(before.steps) + 2 + rng.randint(0, 2)
            while time.monotonic() < deadline and child.poll() is None and len(snapshot(run).steps) < target:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 3.0))
            child.send_signal(signal.SIGKILL)
            child.wait()
            now = snapshot(run)
            issues = problems(run, now, before)
            found += [f"kill {k + 1}: {p}" for p in issues]
            rows.append([k + 1, len(now.steps), len(now.records), now.nodes, now.tokens, now.seconds, len(issues)])
            before = now
        done = subprocess.run(_explore(url, runs, strategy, "--resume", "chaos", "--steps", str(len(before.steps) + 2)),
                              cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
        if done.returncode != 0:
            found.append(f"the last resume failed: {done.stderr.strip().splitlines()[-1:]}")
        final = snapshot(run)
        found += [f"last resume: {p}" for p in problems(run, final, before)]
        rows.append(["end", len(final.steps), len(final.records), final.nodes, final.tokens, final.seconds, 0])
    finally:
        servers.stop()
    return rows, found


COMPARED = ("steps", "states", "urls", "same_url_states", "elements_tried", "failures", "records", "unreachable")


def compare(strategy: str, site: str, runs: Path) -> list[list]:
    """Run the same seed uninterrupted to the killed run's step count; rows: count, killed, uninterrupted."""
    killed = RunMetrics.load(runs / "chaos").summary
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        args = ("--run-id", "straight", "--steps", str(killed.steps))
        done = subprocess.run(_explore(servers.urls[site], runs, strategy, *args), cwd=ROOT, capture_output=True,
                              text=True, timeout=3600)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"the uninterrupted run failed: {done.stderr.strip().splitlines()[-1:]}")
    finally:
        servers.stop()
    straight = RunMetrics.load(runs / "straight").summary
    rows = [[k, getattr(killed, k), getattr(straight, k)] for k in COMPARED]
    for status in sorted(set(killed.statuses) | set(straight.statuses)):
        rows.append([f"nodes {status}", killed.statuses.get(status, 0), straight.statuses.get(status, 0)])
    return rows + [["tokens", killed.tokens, straight.tokens], ["seconds", killed.seconds, straight.seconds]]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--strategy", default="scale")
    p.add_argument("--site", default="shop")
    p.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    p.add_argument("--max-wait", type=float, default=120, help="seconds to wait for a step before killing anyway")
    p.add_argument("--no-compare", action="store_true", help="skip the uninterrupted run of the same seed")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows, found = chaos(args.kills, args.strategy, args.site, args.seed, Path(tmp), args.max_wait)
        print(f"\n{args.kills} SIGKILLs of a {args.strategy} run on the bundled {args.site}, each resumed\n")
        print_table(["kill", "steps", "records", "nodes", "tokens", "seconds", "problems"], rows)
        for line in found:
            print(f"PROBLEM {line}")
        print("\nno step, record, blob or accounting lost" if not found else f"\n{len(found)} problems")
        if not args.no_compare:
            print(f"\nthe killed run beside an uninterrupted {args.strategy} run of the same seed and steps\n")
            print_table(["count", "killed + resumed", "uninterrupted"], compare(args.strategy, args.site, Path(tmp)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
