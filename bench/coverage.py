"""Coverage at an equal step budget: SCALE-Hop (embedded model) vs random walk vs BFS (`bfs`: the URL-frontier crawl;
`bfs-click`: click-and-return) vs novelty-greedy, on each bundled site. Every browser action counts as a step, gotos,
returns and backtracks included. Prints distinct states (raw and alias-merged), same-URL states, URLs and elements
tried, with ratios to the random walk.

Usage: bench/coverage.py [STEPS] [STRATEGIES] (default 60 steps per strategy and site, and every strategy; e.g.
`bench/coverage.py 40 random,bfs,bfs-click,greedy` for the baselines alone: no model).
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

STRATEGIES = ("random", "bfs", "bfs-click", "greedy", "scale")
METRICS = ("states", "states_merged", "same_url_states", "urls", "elements_tried")


async def main(steps: int, strategies: tuple[str, ...] = STRATEGIES) -> None:
    servers = serve_sites(port=0, slow_seconds=3)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as runs:
            for name, url in servers.urls.items():
                site = SiteConfig(name=name, start_url=url, reset_url=url + "__reset", timeouts={"navigation_ms": 5000})
                results = {}
                for strategy in strategies:
                    cfg = ExploreConfig(strategy=strategy, max_steps=steps, seed=0)
                    results[strategy] = await run_exploration(
                        site, cfg, BrowserConfig(), runs_dir=runs, run_id=f"{name}-{strategy}"
                    )
                for strategy in strategies:
                    r, base = results[strategy], results.get("random")
                    ratios = [
                        f"{getattr(r, m) / getattr(base, m):.2f}x" if base and getattr(base, m) else "-"
                        for m in ("states", "states_merged")
                    ]
                    metrics = [getattr(r, m) for m in METRICS]
                    rows.append([name, strategy, r.steps, *metrics, *ratios, r.failures, f"{r.seconds:.0f}"])
    finally:
        servers.stop()
    print(f"coverage at {steps} steps per strategy and site (seed 0)")
    print_table(["site", "strategy", "steps", *METRICS, "states/random", "merged/random", "failures", "seconds"], rows)


if __name__ == "__main__":
    chosen = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else STRATEGIES
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 60, chosen))
