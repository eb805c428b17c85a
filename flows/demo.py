"""`scalehop demo`: the whole job on the bundled sites with the embedded model, through the Prefect flows.

serve the sites -> self_improve (explore every site concurrently, train a LoRA round on the failures,
evaluate on held-out pages, gate) -> explore again with the adopted model -> build the dataset of every run
-> write the HTML report. Prefect runs the flows on its temporary local server unless PREFECT_API_URL is set.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import warnings
from pathlib import Path

from explorer.config import ExploreConfig, SiteConfig
from explorer.models import ModelConfig
from flows.pipeline import build_dataset, explore_site, report, self_improve
from sites import serve_sites
from training.config import TrainConfig

# A budget that fits in about 10 minutes on 2 CPU cores (see the README's demo section).
EXPLORE = ExploreConfig(max_steps=20, steps_per_hop=5, stall_steps=2, verify_actions=1, seed=0)
EXPLORE_AGAIN = ExploreConfig(max_steps=6, steps_per_hop=5, stall_steps=2, verify_actions=1, seed=1)
TRAIN = TrainConfig(epochs=2, batch_size=4, max_length=384, seed=0)
DATASET_LIMIT = 4  # drafts per task type and run: replay validation costs a few seconds per multi-step task


def bundled_site_configs(urls: dict[str, str]) -> list[SiteConfig]:
    """SiteConfigs for the bundled sites served at `urls` (name -> base URL)."""
    return [SiteConfig(name=name, start_url=url, reset_url=url + "__reset") for name, url in urls.items()]


async def _explore_again(sites: list[SiteConfig], out: Path, adapter: Path | None) -> list[dict]:
    model = ModelConfig(adapter=None if adapter is None else str(adapter))
    runs = str(out / "explore-again")
    return list(
        await asyncio.gather(*(explore_site(s, EXPLORE_AGAIN, model, runs_dir=runs, run_id=s.name) for s in sites))
    )


def _quiet_libraries() -> None:
    """Progress bars and a third-party deprecation warning would drown the demo's own lines."""
    from transformers.utils import logging as hf_logging

    import datasets

    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


def run_demo(out: str | Path = "runs/demo", chromium: str | None = None) -> dict:
    """Run the whole job into `out` and print where everything went; returns the paths."""
    out = Path(out)
    t0 = time.perf_counter()
    _quiet_libraries()

    def stage(text: str) -> None:
        print(f"[{time.perf_counter() - t0:4.0f} s] {text}", flush=True)

    for old in ("improve", "explore-again", "dataset", "report.html"):  # the demo's own outputs of a previous run
        if (out / old).is_dir():
            shutil.rmtree(out / old)
        else:
            (out / old).unlink(missing_ok=True)
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        sites = bundled_site_configs(servers.urls)
        print(f"scalehop demo: {', '.join(servers.urls)} served at {', '.join(servers.urls.values())}")
        stage("1/4 self-improvement round: explore each site (SCALE-Hop, embedded model), train, evaluate, gate")
        improve = asyncio.run(
            self_improve(
                sites,
                rounds=1,
                runs_dir=str(out),
                improve_id="improve",
                explore=EXPLORE,
                train=TRAIN,
                chromium=chromium,
            )
        )
        root = out / "improve"
        adapter = improve["adopted_adapter"]
        stage(f"2/4 explore again with {'adapter ' + adapter if adapter else 'the base model (adapter rejected)'}")
        again = asyncio.run(_explore_again(sites, out, root / adapter if adapter else None))
        stage("3/4 build the dataset of every run")
        runs = [str(root / r) for r in improve["rounds"][0]["explore_runs"]] + [a["run_dir"] for a in again]
        stats = build_dataset(runs, None, str(out / "dataset"), DATASET_LIMIT)
        stage("4/4 write the report")
        page = report(str(out))
    finally:
        servers.stop()
    _print_summary(improve, again, stats)
    paths = {"improve": root, "dataset": out / "dataset", "report": Path(page)}
    print(f"\nself-improvement run (improve.json, explore/, adapters/): {root}")
    print(f"explorations with the adopted model: {out / 'explore-again'}")
    print(f"dataset (save_to_disk in hf/, parquet/, README.md card, stats.json): {paths['dataset']}")
    print(f"done in {time.perf_counter() - t0:.0f} s; the report: {page}")
    return paths


def _print_summary(improve: dict, again: list[dict], stats: dict) -> None:
    (r,) = improve["rounds"]
    before, after = (r["before"] or {}), (r["after"] or {})
    print("\nround 1:", f"{r['failures']} failure samples of {r['transitions']} transitions;")
    print(
        f"  held-out Predictor accuracy ({r['heldout']} transitions): "
        f"base {before.get('predictor_accuracy')} -> adapter {after.get('predictor_accuracy')};"
        f" {'adopted' if r['adopted'] else 'rejected'} ({r['reason']})"
    )
    for a in again:
        print(f"  explore again {a['run_id']}: {a['steps']} steps, {a['states']} states, {a['failures']} failures")
    print("dataset rows:", ", ".join(f"{k} {v}" for k, v in stats["counts"].items()))
