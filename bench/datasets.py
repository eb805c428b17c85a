"""Dataset stage throughput: rows per second of each builder (template text), of the model generator beside it,
and the replay-validation pass rate per site. Each bundled site gets a short SCALE run (embedded model) first,
unless run folders are given.

Usage: bench/datasets.py [STEPS] (default 8 steps per site) | bench/datasets.py --runs RUN_DIR...
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import print_table  # noqa: E402
from explorer import BrowserConfig, SiteConfig  # noqa: E402
from explorer.config import ExploreConfig  # noqa: E402
from explorer.models import ModelConfig, load_model  # noqa: E402
from explorer.run import run_exploration  # noqa: E402
from sites import serve_sites  # noqa: E402
from synthesis.generators import ModelGenerator  # noqa: E402
from synthesis.multi_step import build_multi_step  # noqa: E402
from synthesis.page_qa import build_page_qa  # noqa: E402
from synthesis.recipe import DatasetRecipe  # noqa: E402
from synthesis.replay import replay_gate  # noqa: E402
from synthesis.single_step import build_single_step  # noqa: E402
from synthesis.source import open_run  # noqa: E402

MODEL_SAMPLE = 3  # tasks per builder written by the model generator (it is the slow one)
BUILDERS = {
    "single_step": lambda s, r: build_single_step(s, r, Counter()),
    "multi_step": build_multi_step,
    "page_qa": build_page_qa,
}


def measure(run_dir: Path, model, rows: list, replays: list) -> None:
    """Rows/s of each builder (best of 3, from opening the run) and of the model generator beside it; replay of
    every multi-step task."""
    recipe = DatasetRecipe()
    for name, build in BUILDERS.items():
        best, tasks = float("inf"), []
        for _ in range(3):
            t0 = time.perf_counter()
            source = open_run(run_dir)  # cold: reading the store and the observations counts
            tasks = build(source, recipe)
            best = min(best, time.perf_counter() - t0)
            source.close()
        sample = tasks[:MODEL_SAMPLE]
        t0 = time.perf_counter()
        written = ModelGenerator(model).write(sample) if sample else []
        model_s = time.perf_counter() - t0
        fallbacks = sum(t.fallback for t in written)
        template_rate = len(tasks) / best if best else 0.0
        model_rate = len(sample) / model_s if sample else 0.0
        ratio = f"{template_rate / model_rate:.0f}x" if model_rate else "-"
        site = tasks[0].site if tasks else "-"
        rows.append([site, name, len(tasks), template_rate, f"{model_rate:.2f}", ratio, f"{fallbacks}/{len(sample)}"])
    source = open_run(run_dir)
    multi = build_multi_step(source, recipe)
    t0 = time.perf_counter()
    kept, drops = asyncio.run(
        replay_gate(multi, {0: source.site}, {0: source.lookup}, {0: source.delta}, BrowserConfig())
    )
    seconds = time.perf_counter() - t0
    rate = f"{len(kept) / len(multi):.0%}" if multi else "-"
    per_task = seconds / len(multi) if multi else 0.0
    reasons = Counter(d.reason.split(":")[0][:40] for d in drops).most_common(1)
    replays.append([source.site_name, len(multi), len(kept), rate, per_task, reasons[0][0] if reasons else "-"])
    source.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("steps", nargs="?", type=int, default=8)
    parser.add_argument("--runs", nargs="+", help="existing run folders (their sites must be up for replay)")
    args = parser.parse_args()
    model = load_model(ModelConfig())
    rows: list = []
    replays: list = []
    if args.runs:
        for run in args.runs:
            measure(Path(run), model, rows, replays)
    else:
        servers = serve_sites(port=0, slow_seconds=3)
        try:
            with tempfile.TemporaryDirectory() as runs:
                for name, url in servers.urls.items():
                    site = SiteConfig(name=name, start_url=url, reset_url=url + "__reset",
                                      timeouts={"navigation_ms": 5000})  # fmt: skip
                    cfg = ExploreConfig(max_steps=args.steps, steps_per_hop=4, stall_steps=2, verify_actions=1)
                    asyncio.run(run_exploration(site, cfg, BrowserConfig(), runs_dir=runs, run_id=name))
                    measure(Path(runs) / name, model, rows, replays)
        finally:
            servers.stop()
    print("builders: drafts and rows/s (template text, best of 3; model generator on a sample, side by side)")
    print_table(["site", "builder", "drafts", "template rows/s", "model rows/s", "template/model", "fallbacks"], rows)
    print("\nreplay validation of multi-step tasks (fresh browser context per task)")
    print_table(["site", "tasks", "reached", "pass rate", "s/task", "top drop reason"], replays)


if __name__ == "__main__":
    main()
