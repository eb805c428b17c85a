"""State identity and storage costs.

1. The labelled pairs of the bundled sites (configs/state_pairs.yaml) and of a third-party app, Django's admin
   (tests/thirdparty/state_pairs.yaml): false-merge and false-split rates per site of the seed's rule (raw
   screenshot SSIM >= delta) and of state identity (structure, then canonical SSIM: explorer.identity), the
   URL test left out (as if one URL served both sides); then a sweep of delta for both rules.
2. Insert cost ("which node is this?" + add) with 10 ... 10,000 nodes under one URL: the plain rule
   (SSIM against every node) vs StateIndex (exact bound pre-filter), side by side, for a new state and
   for a revisit. Nodes are real screenshots of the bundled sites plus perturbed copies of them.
3. The store's cost per step: one transaction with a node, an edge, the step row, events and a record,
   plus the content-addressed screenshot blob.
4. Replay validation per site, before and after: a random walk of REPLAY_STEPS steps on each site, REPLAY_TASKS
   of its multi-step tasks (spread evenly) replayed once, each judged by the new identity and by the old rule
   (normalized URL and raw SSIM >= delta at the start and the goal); drops grouped by cause.

Usage: bench/dedup.py [--skip-replay | --replay-only]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)

from bench.common import median, pct, print_table  # noqa: E402
from explorer import BrowserConfig, Chromium, SiteConfig  # noqa: E402
from explorer.calibration import build_pairs, error_rates, judge_pairs, load_specs  # noqa: E402
from explorer.config import ExploreConfig  # noqa: E402
from explorer.dedup import DEFAULT_DELTA, StateIndex, plain_identify, thumbnail  # noqa: E402
from explorer.records import Action, Edge, Node  # noqa: E402
from explorer.run import run_exploration  # noqa: E402
from explorer.store import RunStore  # noqa: E402
from sites import serve_sites  # noqa: E402
from synthesis.multi_step import build_multi_step  # noqa: E402
from synthesis.recipe import DatasetRecipe  # noqa: E402
from synthesis.replay import replay_task  # noqa: E402
from synthesis.source import open_run  # noqa: E402
from tests.thirdparty import django_admin_site, serve_django_admin  # noqa: E402

SIZES = (10, 100, 1000, 10000)
THIRD_PARTY_PAIRS = "tests/thirdparty/state_pairs.yaml"
REPLAY_STEPS = 60
REPLAY_TASKS = 40  # replayed per site, spread evenly over the run's multi-step tasks


class Sites:
    """The bundled sites and Django's admin, served for the bench's duration: `.configs` by name."""

    def __enter__(self) -> dict[str, SiteConfig]:
        self.bundled = serve_sites(port=0, slow_seconds=5)
        self.admin = serve_django_admin()
        urls = self.bundled.urls
        configs = {n: SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in urls.items()}
        return configs | {"django-admin": django_admin_site(self.admin.url)}

    def __exit__(self, *exc: object) -> None:
        self.bundled.stop()
        self.admin.stop()


async def labelled_pairs(sites: dict[str, SiteConfig]):
    origins = [o for site in sites.values() for o in site.allowed_origins]
    async with await Chromium.launch(BrowserConfig(), origins) as chromium:
        return await build_pairs(chromium, sites, load_specs() + load_specs(THIRD_PARTY_PAIRS))


def calibration(pairs) -> None:
    sites = sorted({p.site for p in pairs}, key=lambda s: (s == "django-admin", s))
    rows = []
    for site in [*sites, "all"]:
        mine = [p for p in pairs if site in (p.site, "all")]
        same = sum(p.same for p in mine)
        cells = [site + (" (third-party)" if site == "django-admin" else ""), same, len(mine) - same]
        for rule in ("raw", "identity"):
            merges, splits = error_rates(judge_pairs(mine, DEFAULT_DELTA, rule))
            cells += [f"{merges:.1%}", f"{splits:.1%}"]
        rows.append(cells)
    print(f"delta {DEFAULT_DELTA}, URL test left out (both sides compared as if at one URL)")
    headers = ["site", "same", "different", "raw: false merge", "raw: false split"]
    print_table([*headers, "identity: false merge", "identity: false split"], rows)
    print()
    rows = []
    for delta in (0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999):
        cells = [f"{delta}"]
        for rule in ("raw", "identity"):
            merges, splits = error_rates(judge_pairs(pairs, delta, rule))
            cells += [f"{merges:.1%}", f"{splits:.1%}"]
        rows.append([*cells, "  <- default" if delta == DEFAULT_DELTA else ""])
    print_table(["delta", "raw: merge", "raw: split", "identity: merge", "identity: split", ""], rows)


def variants(bases: list[np.ndarray], n: int, seed: int = 0) -> list[np.ndarray]:
    """n distinct page-like thumbnails: real screenshots with moved and recolored blocks."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        img = bases[i % len(bases)].copy()
        h, w = img.shape
        for _ in range(3):
            y, x = rng.integers(0, h - 40), rng.integers(0, w - 80)
            dy, dx = rng.integers(-20, 20), rng.integers(-40, 40)
            block = img[y : y + 40, x : x + 80].copy()
            y2, x2 = np.clip(y + dy, 0, h - 40), np.clip(x + dx, 0, w - 80)
            img[y2 : y2 + 40, x2 : x2 + 80] = block // 2 + rng.integers(0, 120)
        out.append(img)
    return out


def insert_cost(pairs) -> None:
    bases = [thumbnail(obs.screenshot) for p in pairs for obs in (p.a, p.b)]
    rows = []
    for n in SIZES:
        nodes = variants(bases, n)
        index = StateIndex(DEFAULT_DELTA)
        for i, thumb in enumerate(nodes):
            index.add(str(i), "u", thumb)
        plain_nodes = [(str(i), t) for i, t in enumerate(nodes)]
        fresh = variants(bases, 1, seed=n + 1)[0]  # a state not in the index: every node is a candidate
        touched = nodes[n // 3].copy()
        touched[60:66, 100:130] = np.clip(touched[60:66, 100:130].astype(int) - 12, 0, 255)  # a small change
        queries = (("new state", fresh), ("revisit", nodes[n // 2]), ("revisit, small change", touched))
        for label, query in queries:
            repeats = 1 if n >= 1000 else 5
            t0 = time.perf_counter()
            for _ in range(repeats):
                want = plain_identify(plain_nodes, query, DEFAULT_DELTA)
            plain_s = (time.perf_counter() - t0) / repeats
            t0 = time.perf_counter()
            for _ in range(repeats * 5):
                got = index.identify("u", query)
            ours_s = (time.perf_counter() - t0) / (repeats * 5)
            assert got.node_id == want[0], (n, label)
            rows.append([n, label, plain_s * 1000, f"{ours_s * 1000:.2f}", f"{plain_s / ours_s:.0f}x", got.exact])
    print_table(["nodes/URL", "query", "plain ms", "StateIndex ms", "speed-up", "exact SSIMs"], rows)


def store_cost(pairs, steps: int = 200) -> None:
    pngs = [p.b.screenshot for p in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore.create(tmp, "bench")
        blob_ms, tx_ms = [], []
        for i in range(steps):
            png = pngs[i % len(pngs)] + i.to_bytes(4, "big")  # distinct blobs
            t0 = time.perf_counter()
            digest = store.put_blob(png)
            t1 = time.perf_counter()
            node = Node(id=f"n{i}", url="http://a.test/", raw_url="http://a.test/", screenshot=digest)
            edge = Edge(src=f"n{max(0, i - 1)}", dst=f"n{i}", action=Action(kind="click", element_key="k"))
            with store.step(i) as tx:
                tx.node(node)
                tx.edge(edge)
                tx.action(edge.src, node.id, edge.action.model_dump(mode="json"), {"ok": True})
                tx.event("dialog", "alert: hi", "http://a.test/")
                tx.record("failure", {"observation": "x" * 2000})
            t2 = time.perf_counter()
            blob_ms.append((t1 - t0) * 1000)
            tx_ms.append((t2 - t1) * 1000)
        store.close()
    print_table(
        ["store per step", "p50 ms", "p90 ms"],
        [["screenshot blob", median(blob_ms), pct(blob_ms, 0.9)], ["step transaction", median(tx_ms), pct(tx_ms, 0.9)]],
    )


async def replays(sites: dict[str, SiteConfig], runs: str) -> None:
    rows, dropped = [], []
    for name, site in sites.items():
        cfg = ExploreConfig(strategy="random", max_steps=REPLAY_STEPS, seed=0)
        await run_exploration(site, cfg, BrowserConfig(), runs_dir=runs, run_id=name)
        source = open_run(Path(runs) / name)
        every = build_multi_step(source, DatasetRecipe())
        tasks = [every[i * len(every) // REPLAY_TASKS] for i in range(min(REPLAY_TASKS, len(every)))]
        results = []
        async with await Chromium.launch(BrowserConfig(), site.allowed_origins) as chromium:
            for task in tasks:
                results.append(await replay_task(chromium, site, task, source.lookup, source.delta))
        source.close()
        causes = Counter(r.cause for r in results if not r.ok)
        dropped.extend(
            f"{name}: {task.instruction[:70]} -> {r.reason}" for task, r in zip(tasks, results, strict=True) if not r.ok
        )
        n = len(results)
        rows.append(
            [
                name + (" (third-party)" if name == "django-admin" else ""),
                n,
                f"{sum(r.raw_ok for r in results)} ({sum(r.raw_ok for r in results) / max(1, n):.0%})",
                f"{sum(r.ok for r in results)} ({sum(r.ok for r in results) / max(1, n):.0%})",
                ", ".join(f"{c} {k}" for c, k in causes.most_common()) or "-",
            ]
        )
    print_table(["site", "tasks", "kept: old rule", "kept: identity", "identity's drops by cause"], rows)
    print("\n".join(["identity's drops:", *dropped]))


def main() -> None:
    skip_replay, replay_only = "--skip-replay" in sys.argv[1:], "--replay-only" in sys.argv[1:]
    with Sites() as sites:
        if not replay_only:
            pairs = asyncio.run(labelled_pairs(sites))
            print("1. labelled pairs: false merges and false splits per site, the seed's rule vs state identity")
            calibration(pairs)
            print("\n2. insert cost under one URL: plain SSIM against every node vs StateIndex (same answers)")
            insert_cost(pairs)
            print("\n3. store cost per step (SQLite WAL, one transaction per step)")
            store_cost(pairs)
        if not skip_replay:
            print(f"\n4. replay validation per site: {REPLAY_TASKS} tasks of a {REPLAY_STEPS}-step random walk each")
            with tempfile.TemporaryDirectory() as runs:
                asyncio.run(replays(sites, runs))


if __name__ == "__main__":
    main()
