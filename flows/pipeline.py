"""Prefect flows: thin layers over the plain functions of each stage.

- `explore_site`: one exploration run on one site (a retried task: a retry resumes the same run folder).
- `build_dataset`: reverse construction of a run folder (or several) into a Hugging Face dataset.
- `train_round`: one self-improvement round's learning half on explored runs (train, evaluate, gate).
- `self_improve`: explore many sites concurrently, then train, evaluate and gate; repeat for R rounds.
- `report`: the self-contained HTML report of a run folder.

Exploration tasks carry the tag `site:<name>`: a Prefect tag concurrency limit of 1 on it
(`prefect concurrency-limit create site:<name> 1`, done by `scalehop schedule`) keeps one exploration per site.
Tasks retry on transient faults (a browser crash, a model server 5xx); configuration errors fail at once.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import acreate_table_artifact, create_markdown_artifact, create_table_artifact

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig, load_site_config
from explorer.errors import ScalehopError
from explorer.models import ModelConfig
from training.config import TrainConfig

RETRIES = 2
RETRY_DELAY_S = 10


def transient(task_, task_run, state) -> bool:
    """Retry anything but a user error (bad config, bad path): those fail the same way every time."""
    try:
        state.result()
    except ScalehopError:
        return False
    except Exception:  # noqa: BLE001 - a crash, a timeout, a 5xx: worth another try
        return True
    return False


def site_config(site: str | SiteConfig) -> SiteConfig:
    """A SiteConfig from a config path or start URL (deployment parameters are plain strings)."""
    return site if isinstance(site, SiteConfig) else load_site_config(site)


@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient, persist_result=True)
async def explore_task(
    site: SiteConfig, explore: ExploreConfig, browser: BrowserConfig, model: ModelConfig, runs_dir: str, run_id: str
) -> dict:
    """One exploration run; a retry continues the run folder it left."""
    from flows.explore import run_exploration

    again = (Path(runs_dir) / run_id / "run.sqlite").exists()
    return await run_exploration(
        site, explore, browser, model, runs_dir=runs_dir, run_id=run_id, resume_run=run_id if again else None
    )


@flow(name="explore_site", log_prints=True)
async def explore_site(
    site: str | SiteConfig,
    explore: ExploreConfig | None = None,
    model: ModelConfig | None = None,
    runs_dir: str = "runs",
    run_id: str | None = None,
    chromium: str | None = None,
) -> dict:
    """Explore one site (config path or start URL) into `runs_dir/run_id`; returns the run's summary."""
    from flows.explore import new_run_id

    config = site_config(site)
    explore = explore or ExploreConfig()
    run_id = run_id or new_run_id(explore.strategy)
    summary = await explore_task.with_options(tags=[f"site:{config.name}"])(
        config, explore, BrowserConfig(executable=chromium), model or ModelConfig(), runs_dir, run_id
    )
    await acreate_table_artifact(
        key=f"explore-{_key(config.name)}",
        table=[{k: summary[k] for k in ("run_id", "strategy", "steps", "states", "urls", "failures", "tokens")}],
        description=f"Exploration of {config.name}: {summary['run_dir']}",
    )
    return summary


@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient)
def dataset_task(run_dirs: list[str], recipe: str | None, out: str | None, limit: int | None) -> dict:
    """Reverse construction (see synthesis.build.build_dataset); returns stats.json's content."""
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe

    return build_dataset(run_dirs, load_recipe(recipe, **({"limit": limit} if limit else {})), out).stats


# no log_prints: datasets fingerprints with dill, whose stdout capture of `dis` would land in the log
@flow(name="build_dataset")
def build_dataset(
    run_dirs: list[str], recipe: str | None = None, out: str | None = None, limit: int | None = None
) -> dict:
    """Build the dataset of explored runs (`limit`: at most this many drafts per task type and run); a markdown
    artifact shows its counts."""
    stats = dataset_task(run_dirs, recipe, out, limit)
    lines = [f"| {kind} | {n} |" for kind, n in stats["counts"].items()]
    create_markdown_artifact(
        key="dataset",
        markdown="\n".join(["# Dataset", f"`{stats['out']}`", "", "| task type | rows |", "|---|---|", *lines]),
    )
    return stats


@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient)
def learn_task(summary: dict, k: int, improve_dir: str, new_runs: list[str], train: TrainConfig, seconds: float):
    """Round k's learning half (training.improve.learn_round): train, evaluate, gate; returns the summary."""
    from explorer.models import Embedder, load_model
    from training.improve import learn_round

    model = load_model(ModelConfig(model=train.base_model))
    return learn_round(
        summary, k, improve_dir, [Path(r) for r in new_runs], train, model, Embedder().similarity, seconds
    )


@flow(name="train_round", log_prints=True)
def train_round(
    improve_dir: str, k: int, runs: list[str], train: TrainConfig | None = None, heldout_share: float = 0.3
) -> dict:
    """Learn from explored runs as round k of the improve run `improve_dir` (continuing its improve.json)."""
    from training.improve import new_summary

    train = train or TrainConfig()
    summary_file = Path(improve_dir) / "improve.json"
    if summary_file.exists():
        summary = json.loads(summary_file.read_text())
    else:
        sites = [SiteConfig.model_validate(_run_meta(r)["site"]) for r in runs]
        summary = new_summary(sites, improve_dir, ExploreConfig(), train, heldout_share)
    summary = learn_task(summary, k, improve_dir, runs, train, 0.0)
    create_table_artifact(key=_rounds_key(summary), table=round_rows(summary), description="Self-improvement rounds")
    return summary


@flow(name="self_improve", log_prints=True)
async def self_improve(
    sites: list[str | SiteConfig],
    rounds: int = 1,
    runs_dir: str = "runs",
    improve_id: str | None = None,
    explore: ExploreConfig | None = None,
    train: TrainConfig | None = None,
    heldout_share: float = 0.3,
    chromium: str | None = None,
) -> dict:
    """R rounds: explore every site concurrently (one task per site) with the adopted adapter, then train,
    evaluate and gate; the improve run goes to `runs_dir/improve_id` (improve.json, explore/, adapters/)."""
    from training.improve import adopted, new_summary

    configs = [site_config(s) for s in sites]
    explore, train = explore or ExploreConfig(), train or TrainConfig()
    root = Path(runs_dir) / (improve_id or time.strftime("%Y%m%d-%H%M%S") + "-improve")
    summary = new_summary(configs, root, explore, train, heldout_share)
    browser = BrowserConfig(executable=chromium)
    for k in range(1, rounds + 1):
        t0 = time.perf_counter()
        current = adopted(summary, root)
        model = ModelConfig(model=train.base_model, adapter=None if current is None else str(current))
        round_dir = root / "explore" / f"round-{k}"
        await asyncio.gather(
            *(
                explore_task.with_options(tags=[f"site:{c.name}"])(c, explore, browser, model, str(round_dir), c.name)
                for c in configs
            )
        )
        new_runs = [str(round_dir / c.name) for c in configs]
        summary = await asyncio.to_thread(learn_task, summary, k, str(root), new_runs, train, time.perf_counter() - t0)
        await acreate_table_artifact(
            key=_rounds_key(summary), table=round_rows(summary), description="Self-improvement rounds"
        )
    return summary


def round_rows(summary: dict) -> list[dict]:
    """The rounds so far as table rows: failures, held-out accuracy before and after, the gate's decision."""
    return [
        {
            "round": r["round"],
            "failures": r["failures"],
            "heldout": r["heldout"],
            "accuracy_before": (r["before"] or {}).get("predictor_accuracy"),
            "accuracy_after": (r["after"] or {}).get("predictor_accuracy"),
            "adopted": r["adopted"],
            "reason": r["reason"],
        }
        for r in summary["rounds"]
    ]


def _rounds_key(summary: dict) -> str:
    return f"improve-{_key(summary['improve_id'])}"


def _run_meta(run_dir: str) -> dict:
    from explorer.store import RunStore

    store = RunStore(run_dir)
    try:
        return store.meta()
    finally:
        store.close()


@task
def report_task(path: str) -> str:
    """The HTML report of a run folder (see flows.report.build_report)."""
    from flows.report import build_report

    return str(build_report(path))


@flow(name="report")
def report(path: str) -> str:
    """Write the run folder's HTML report; returns its path."""
    return report_task(path)


def _key(name: str) -> str:
    """An artifact key: lowercase letters, digits and dashes only."""
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "site"


def run(flow_fn, *args, **kwargs):
    """Call a flow from synchronous code (async flows get an event loop)."""
    result = flow_fn(*args, **kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result
