"""State identity and storage costs.

1. Calibration of delta on the labelled pairs of the bundled sites (configs/state_pairs.yaml): the
   false-merge and false-split rates for a sweep of thresholds.
2. Insert cost ("which node is this?" + add) with 10 ... 10,000 nodes under one URL: the plain rule
   (SSIM against every node) vs StateIndex (exact bound pre-filter), side by side, for a new state and
   for a revisit. Nodes are real screenshots of the bundled sites plus perturbed copies of them.
3. The store's cost per step: one transaction with a node, an edge, the step row, events and a record,
   plus the content-addressed screenshot blob.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)

from bench.common import median, pct, print_table  # noqa: E402
from explorer import BrowserConfig, Chromium, SiteConfig  # noqa: E402
from explorer.calibration import build_pairs, error_rates, load_specs  # noqa: E402
from explorer.dedup import DEFAULT_DELTA, StateIndex, plain_identify, ssim, thumbnail  # noqa: E402
from explorer.records import Action, Edge, Node  # noqa: E402
from explorer.store import RunStore  # noqa: E402
from sites import serve_sites  # noqa: E402

SIZES = (10, 100, 1000, 10000)


async def labelled_pairs():
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        sites = {n: SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in servers.urls.items()}
        async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites.values()]) as chromium:
            return await build_pairs(chromium, sites, load_specs())
    finally:
        servers.stop()


def calibration(pairs) -> None:
    scored = [(p.same, ssim(thumbnail(p.a), thumbnail(p.b))) for p in pairs]
    same = [s for ok, s in scored if ok]
    diff = [s for ok, s in scored if not ok]
    print(f"labelled pairs: {len(same)} same-state, {len(diff)} different-state")
    print(f"same-state SSIM min {min(same):.4f}; different-state SSIM max {max(diff):.4f}")
    rows = []
    for delta in (0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999):
        merges, splits = error_rates(scored, delta)
        mark = "  <- default" if delta == DEFAULT_DELTA else ""
        rows.append([f"{delta}", f"{merges:.1%}", f"{splits:.1%}", mark])
    print_table(["delta", "false merge", "false split", ""], rows)


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
    bases = [thumbnail(png) for p in pairs for png in (p.a, p.b)]
    rows = []
    for n in SIZES:
        nodes = variants(bases, n)
        index = StateIndex(DEFAULT_DELTA)
        for i, thumb in enumerate(nodes):
            index.add(str(i), "u", thumb)
        plain_nodes = [(str(i), t) for i, t in enumerate(nodes)]
        fresh = variants(bases, 1, seed=n + 1)[0]  # a state not in the index: every node is a candidate
        revisit = nodes[n // 2]
        for label, query in (("new state", fresh), ("revisit", revisit)):
            repeats = 1 if n >= 1000 else 5
            t0 = time.perf_counter()
            for _ in range(repeats):
                want = plain_identify(plain_nodes, query, DEFAULT_DELTA)
            plain_s = (time.perf_counter() - t0) / repeats
            t0 = time.perf_counter()
            for _ in range(repeats):
                got = index.identify("u", query)
            ours_s = (time.perf_counter() - t0) / repeats
            assert got.node_id == want[0], (n, label)
            rows.append([n, label, plain_s * 1000, ours_s * 1000, f"{plain_s / ours_s:.0f}x", got.exact])
    print_table(["nodes/URL", "query", "plain ms", "StateIndex ms", "speed-up", "exact SSIMs"], rows)


def store_cost(pairs, steps: int = 200) -> None:
    pngs = [p.b for p in pairs]
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


def main() -> None:
    pairs = asyncio.run(labelled_pairs())
    print("1. delta calibration on the bundled sites")
    calibration(pairs)
    print("\n2. insert cost under one URL: plain SSIM against every node vs StateIndex (same answers)")
    insert_cost(pairs)
    print("\n3. store cost per step (SQLite WAL, one transaction per step)")
    store_cost(pairs)


if __name__ == "__main__":
    main()
