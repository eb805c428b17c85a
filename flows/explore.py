"""The `explore_site` flow: one exploration run on one site, as a retried task (a retry resumes the same run
folder).

Exploration tasks carry the tag `site:<name>`: a Prefect tag concurrency limit of 1 on it
(`prefect concurrency-limit create site:<name> 1`, done by `scalehop schedule`) keeps one exploration per site.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.artifacts import acreate_table_artifact

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.models import ModelConfig
from explorer.run import new_run_id, run_exploration
from explorer.summary import RunSummary
from flows.tasks import RETRIES, RETRY_DELAY_S, artifact_key, site_config, transient


@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient, persist_result=True)
async def explore_task(
    site: SiteConfig, explore: ExploreConfig, browser: BrowserConfig, model: ModelConfig, runs_dir: str, run_id: str
) -> RunSummary:
    """One exploration run; a retry continues the run folder it left."""
    again = (Path(runs_dir) / run_id / "run.sqlite").exists()
    return await run_exploration(
        site, explore, browser, model, runs_dir=runs_dir, run_id=run_id, resume_run=run_id if again else None
    )


def site_task(site: SiteConfig):
    """`explore_task` tagged with the site, for the per-site concurrency limit."""
    return explore_task.with_options(tags=[f"site:{site.name}"])


@flow(name="explore_site", log_prints=True)
async def explore_site(
    site: str | SiteConfig,
    explore: ExploreConfig | None = None,
    model: ModelConfig | None = None,
    runs_dir: str = "runs",
    run_id: str | None = None,
    chromium: str | None = None,
) -> RunSummary:
    """Explore one site (config path or start URL) into `runs_dir/run_id`; returns the run's summary."""
    config = site_config(site)
    explore = explore or ExploreConfig()
    run_id = run_id or new_run_id(explore.strategy)
    summary = await site_task(config)(
        config, explore, BrowserConfig(executable=chromium), model or ModelConfig(), runs_dir, run_id
    )
    await acreate_table_artifact(
        key=f"explore-{artifact_key(config.name)}",
        table=[summary.model_dump(include={"run_id", "strategy", "steps", "states", "urls", "failures", "tokens"})],
        description=f"Exploration of {config.name}: {summary.run_dir}",
    )
    return summary
