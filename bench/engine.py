"""Engine throughput and overhead on the bundled shop.

1. Steps per second with 1, 2 and 4 browser contexts sharing one graph and store (random walk: no model,
   so this measures the browser side), side by side in one run; section 4 does the same for SCALE (1 and 4
   contexts, the embedded model shared through the batcher: the contexts' generations and option scores are
   merged into batches), over the whole STEPS budget, and 4 contexts once more without continuous batching.
2. Where a SCALE step's time goes (embedded model, 1 context): the model calls against everything else
   (act, observe, dedup, graph, store), as shares of the step time.
3. SCALE with the model-call speedups on and off, the same seed and steps, side by side: constrained decoding (the
   model config's `grammar`), KV reuse of shared prompt prefixes (`prefix_cache`) and prompt lookup decoding
   (`draft_tokens`). Median step time, the ratio,
   time by part (prefill and decode are parts of the model's time, which overlaps the browser's: the Predictor
   decodes while the action runs) and, per role, calls, answers written under the grammar, repairs and fallbacks.

Usage: bench/engine.py [STEPS] (default 40).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common import print_table  # noqa: E402
from explorer import BrowserConfig, SiteConfig  # noqa: E402
from explorer.config import ExploreConfig  # noqa: E402
from explorer.models import ModelConfig  # noqa: E402
from explorer.run import run_exploration  # noqa: E402
from explorer.store import RunStore  # noqa: E402
from sites import serve_sites  # noqa: E402

PARTS = ("act", "observe", "dedup", "graph", "store", "model")
MODEL_PARTS = ("model", "prefill", "decode")
ARMS = {  # the model-call speedups: all on (the default config), all off (plain `generate`, parse and repair)
    "on": {"grammar": True, "prefix_cache": True, "draft_tokens": 8},
    "off": {"grammar": False, "prefix_cache": False, "draft_tokens": 0},
}


def timings(run_dir: str) -> dict[str, float]:
    """Seconds per part of the run at `run_dir` (its meta's timings)."""
    store = RunStore(run_dir)
    try:
        return store.meta().timings
    finally:
        store.close()


async def main(steps: int) -> None:
    servers = serve_sites(port=0, slow_seconds=3)
    url = servers.urls["shop"]
    site = SiteConfig(name="shop", start_url=url, reset_url=url + "__reset", timeouts={"navigation_ms": 5000})
    try:
        with tempfile.TemporaryDirectory() as runs:
            rows = await by_contexts(site, "random", steps, runs, (1, 2, 4))
            cfg = ExploreConfig(strategy="scale", max_steps=steps // 2, seed=0)
            grammar_rows, arm_parts, medians, runs_of = [], {}, {}, {}
            for arm, fields in ARMS.items():
                run = await run_exploration(
                    site, cfg, BrowserConfig(), ModelConfig(**fields), runs_dir=runs, run_id=f"speedups-{arm}"
                )
                medians[arm], rows_of_arm = decoding_rows(arm, run.run_dir)
                grammar_rows += rows_of_arm
                arm_parts[arm] = (run.steps, timings(run.run_dir))
                runs_of[arm] = run
            # the whole budget: 4 contexts start together on the start page, so in a short run (12 steps: 3 each)
            # their first calls, one lone prompt after another, are most of it
            scale_rows = await by_contexts(site, "scale", steps, runs, (1, 4))
            # the same 4 contexts with batches that run to their longest row (no continuous batching)
            scale_rows += await by_contexts(
                site, "scale", steps, runs, (4,), ModelConfig(continuous_batching=False), base=scale_rows[0]
            )
    finally:
        servers.stop()
    print("1. random walk on shop: steps/s by browser contexts")
    print_table(["contexts", "model batching", "steps", "seconds", "steps/s", "vs 1 context"], rows)
    r, parts = runs_of["on"], arm_parts["on"][1]
    total = r.seconds
    print(f"\n2. SCALE on shop, {r.steps} steps in {total:.1f} s ({total / r.steps:.2f} s/step): time by part")
    share = [[p, f"{parts.get(p, 0.0):.1f}", f"{parts.get(p, 0.0) / total:.1%}"] for p in PARTS]
    outside = sum(parts.get(p, 0.0) for p in ("observe", "dedup", "graph", "store"))
    share.append(["observe+dedup+graph+store", f"{outside:.1f}", f"{outside / total:.1%}"])
    print_table(["part", "seconds", "share of run"], share)
    print(f"\n3. SCALE on shop, {cfg.max_steps} steps, model-call speedups on and off (same seed)")
    print_table(["speedups", "median s/step", "role", "calls", "constrained", "repairs", "fallbacks"], grammar_rows)
    if medians.get("off"):
        print(f"median step time on / off: {medians['on'] / medians['off']:.2f}x (the goal: <= 0.25x)")
    by_part = [
        [part, *(f"{arm_parts[arm][1].get(part, 0.0) / max(arm_parts[arm][0], 1):.2f}" for arm in ARMS)]
        for part in PARTS + MODEL_PARTS[1:]
    ]
    print_table(["part (s/step)", *ARMS], by_part)
    print("\n4. SCALE on shop: steps/s by browser contexts (the goal: 4 contexts >= 1.8x one)")
    print_table(["contexts", "model batching", "steps", "seconds", "steps/s", "vs 1 context"], scale_rows)


async def by_contexts(
    site: SiteConfig,
    strategy: str,
    steps: int,
    runs: str,
    counts: tuple[int, ...],
    model: ModelConfig | None = None,
    base: list | None = None,
) -> list[list]:
    """One row per context count: batching, steps, seconds, steps/s and the ratio to the first count's steps/s (or
    to row `base`'s)."""
    model = model or ModelConfig()
    batching = "continuous" if model.continuous_batching else "whole batches"
    rows, rate0 = [], float(base[4]) if base else None
    for contexts in counts:
        cfg = ExploreConfig(strategy=strategy, max_steps=steps, contexts=contexts, seed=0)
        run_id = f"{strategy}-{contexts}-{batching.split()[0]}"
        r = await run_exploration(site, cfg, BrowserConfig(), model, runs_dir=runs, run_id=run_id)
        rate = r.steps / r.seconds
        rate0 = rate0 or rate
        rows.append([contexts, batching if strategy == "scale" else "-", r.steps, f"{r.seconds:.1f}", f"{rate:.3f}"])
        rows[-1].append(f"{rate / rate0:.2f}x")
    return rows


def decoding_rows(label: str, run_dir: str) -> tuple[float, list[list]]:
    """(the run's median step time, one row per role: that time and the role's answer counts)."""
    store = RunStore(run_dir)
    try:
        steps = store.steps()
        roles = store.meta().roles
    finally:
        store.close()
    gaps = sorted(b.created - a.created for a, b in zip(steps, steps[1:], strict=False))
    med = gaps[len(gaps) // 2] if gaps else 0.0
    keys = ("calls", "constrained", "repairs", "fallbacks")
    rows = [[label, f"{med:.2f}", role, *(int(c.get(k, 0)) for k in keys)] for role, c in sorted(roles.items())]
    return med, rows


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 40))
