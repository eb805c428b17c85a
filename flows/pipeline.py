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
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig, load_site_config
from explorer.errors import ScalehopError
from explorer.models import ModelConfig

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
    site: str,
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
    await create_table_artifact(
        key=f"explore-{_key(config.name)}",
        table=[{k: summary[k] for k in ("run_id", "strategy", "steps", "states", "urls", "failures", "tokens")}],
        description=f"Exploration of {config.name}: {summary['run_dir']}",
    )
    return summary


@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient)
def dataset_task(run_dirs: list[str], recipe: str | None, out: str | None) -> dict:
    """Reverse construction (see synthesis.build.build_dataset); returns stats.json's content."""
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe

    return build_dataset(run_dirs, load_recipe(recipe), out).stats


@flow(name="build_dataset", log_prints=True)
def build_dataset(run_dirs: list[str], recipe: str | None = None, out: str | None = None) -> dict:
    """Build the dataset of explored runs; a markdown artifact shows its counts."""
    stats = dataset_task(run_dirs, recipe, out)
    lines = [f"| {kind} | {n} |" for kind, n in stats["counts"].items()]
    create_markdown_artifact(
        key="dataset",
        markdown="\n".join(["# Dataset", f"`{stats['out']}`", "", "| task type | rows |", "|---|---|", *lines]),
    )
    return stats


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
