"""Coverage at an equal step budget: SCALE-Hop (embedded model) vs random walk vs BFS vs novelty-greedy, on each
bundled site. Every browser action counts as a step, returns and backtracks included. Prints distinct states
(raw and alias-merged), same-URL states, URLs and elements tried, with ratios to the random walk.

Usage: bench/coverage.py [STEPS] (default 60 per strategy and site).
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
from explorer.run import run_exploration  # noqa: E402
from sites import serve_sites  # noqa: E402

STRATEGIES = ("random", "bfs", "greedy", "scale")
METRICS = ("states", "states_merged", "same_url_states", "urls", "elements_tried")


async def main(steps: int) -> None:
    servers = serve_sites(port=0, slow_seconds=3)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as runs:
            for name, url in servers.urls.items():
                site = SiteConfig(name=name, start_url=url, reset_url=url + "__reset", timeouts={"navigation_ms": 5000})
                results = {}
                for strategy in STRATEGIES:
                    cfg = ExploreConfig(strategy=strategy, max_steps=steps, seed=0)
                    results[strategy] = await run_exploration(
                        site, cfg, BrowserConfig(), runs_dir=runs, run_id=f"{name}-{strategy}"
                    )
                for strategy in STRATEGIES:
                    r, base = results[strategy], results["random"]
                    ratios = [
                        f"{getattr(r, m) / getattr(base, m):.2f}x" if getattr(base, m) else "-"
                        for m in ("states", "states_merged")
                    ]
                    metrics = [getattr(r, m) for m in METRICS]
                    rows.append([name, strategy, r.steps, *metrics, *ratios, r.failures, f"{r.seconds:.0f}"])
    finally:
        servers.stop()
    print(f"coverage at {steps} steps per strategy and site (seed 0)")
    print_table(["site", "strategy", "steps", *METRICS, "states/random", "merged/random", "failures", "seconds"], rows)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 60))
