"""The `build_dataset` flow: reverse construction of run folders into a Hugging Face dataset."""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact

from flows.tasks import RETRIES, RETRY_DELAY_S, transient
from synthesis.stats import DatasetStats


# log_prints off even inside a flow that logs prints (self_improve): see build_dataset below
@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient, log_prints=False)
def dataset_task(run_dirs: list[str], recipe: str | None, out: str | None, limit: int | None) -> DatasetStats:
    """Reverse construction (see synthesis.build.build_dataset); returns its stats.json."""
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe

    return build_dataset(run_dirs, load_recipe(recipe, **({"limit": limit} if limit else {})), out).stats


# no log_prints: datasets fingerprints with dill, whose stdout capture of `dis` would land in the log
@flow(name="build_dataset")
def build_dataset(
    run_dirs: list[str], recipe: str | None = None, out: str | None = None, limit: int | None = None
) -> DatasetStats:
    """Build the dataset of explored runs (`limit`: at most this many drafts per task type and run); a markdown
    artifact shows its counts."""
    stats = dataset_task(run_dirs, recipe, out, limit)
    lines = [f"| {kind} | {n} |" for kind, n in stats.counts.items()]
    create_markdown_artifact(
        key="dataset",
        markdown="\n".join(["# Dataset", f"`{stats.out}`", "", "| task type | rows |", "|---|---|", *lines]),
    )
    return stats
