"""The self-improvement flows over `training.improve` (the one improve loop):

- `self_improve`: R rounds of explore (every site concurrently, one retried, site-tagged task each) -> dataset
  (reverse construction of the round's runs) -> train -> evaluate (held-out pages, dev tasks) -> gate; a table
  artifact shows the rounds after each.
- `train_round`: one round's learning half on runs explored elsewhere (train, evaluate, gate).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_table_artifact

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.models import ModelConfig
from flows.dataset import dataset_task
from flows.explore import site_task
from flows.tasks import RETRIES, RETRY_DELAY_S, artifact_key, site_config, transient
from training.config import TrainConfig
from training.state import ImproveState, new_improve_id
from training.tasks import TaskEvalConfig

ROUND_RECIPE = "quick"  # the recipe a round's dataset is built with


def round_dataset(runs: Sequence[Path], out: Path) -> Path:
    """A round's dataset step: reverse construction of its runs into `out` (kept: a resumed round reuses it)."""
    if not (out / "stats.json").is_file():
        from synthesis.build import build_dataset
        from synthesis.recipe import load_recipe

        build_dataset(list(runs), load_recipe(ROUND_RECIPE), out)
    return out


def dataset_in_task(runs: Sequence[Path], out: Path) -> Path:
    """The flow's dataset step: `dataset_task`, a retried Prefect task (skipped when the dataset is there)."""
    if not (out / "stats.json").is_file():
        dataset_task([str(r) for r in runs], ROUND_RECIPE, str(out), None)
    return out


async def explore_concurrently(
    sites: Sequence[SiteConfig], runs_dir: Path, explore: ExploreConfig, browser: BrowserConfig, model: ModelConfig
) -> list[Path]:
    """The flow's explore step: one retried `explore_task` per site, all at once, into `runs_dir/<site>/`."""
    await asyncio.gather(*(site_task(s)(s, explore, browser, model, str(runs_dir), s.name) for s in sites))
    return [runs_dir / s.name for s in sites]


def round_rows(state: ImproveState) -> list[dict]:
    """The rounds so far as table rows: failures, examples per view, the floor, held-out accuracy before and after,
    dev-task SR and AS before and after, the decision."""
    return [
        {
            "round": r.round,
            "failures": r.failures,
            "examples": r.examples_by_view,
            "heldout": r.heldout,
            "floor": None if r.floor is None else r.floor.accuracy,
            "accuracy_before": None if r.before is None else r.before.predictor_accuracy,
            "accuracy_after": None if r.after is None else r.after.predictor_accuracy,
            "tasks": None if r.tasks is None else r.tasks.n,
            "sr_before": None if r.tasks is None else r.tasks.before.sr,
            "sr_after": None if r.tasks is None else r.tasks.after.sr,
            "as_before": None if r.tasks is None else r.tasks.before.avg_steps,
            "as_after": None if r.tasks is None else r.tasks.after.avg_steps,
            "adopted": r.adopted,
            "reason": r.reason,
        }
        for r in state.rounds
    ]


def publish_rounds(state: ImproveState):
    """The rounds table as a Prefect artifact (one key per improve run); awaitable when called in an event loop."""
    return create_table_artifact(
        key=f"improve-{artifact_key(state.improve_id)}", table=round_rows(state), description="Self-improvement rounds"
    )


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
    task_eval: TaskEvalConfig | None = None,
    serving: ModelConfig | None = None,
) -> ImproveState:
    """R rounds into `runs_dir/improve_id` (improve.json, explore/, datasets/, adapters/, evals/); an existing
    improve run of that id is resumed. `task_eval`: the dev tasks rounds are gated on (None: the Predictor);
    `serving`: the model that explores and is evaluated (an openai server hot-loads each adapter; default: local)."""
    from training.improve import run_improvement

    return await run_improvement(
        [site_config(s) for s in sites],
        rounds,
        Path(runs_dir) / (improve_id or new_improve_id()),
        explore=explore or ExploreConfig(),
        train=train or TrainConfig(),
        browser=BrowserConfig(executable=chromium),
        heldout_share=heldout_share,
        task_eval=task_eval,
        serving=serving,
        explore_step=explore_concurrently,
        dataset_step=dataset_in_task,
        learn_step=partial(learn_in_task, serving=serving),
        on_round=publish_rounds,
    )


# no log_prints: training hands its rows to `datasets` (TRL's SFTTrainer), which fingerprints with dill, whose
# stdout capture of `dis` would land in the log (as in flows/dataset.py)
@task(retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, retry_condition_fn=transient, log_prints=False)
def learn_task(
    state: ImproveState,
    k: int,
    improve_dir: str,
    runs: list[str],
    train: TrainConfig,
    seconds: float = 0.0,
    datasets: list[str] | None = None,
    sites: list[SiteConfig] | None = None,
    browser: BrowserConfig | None = None,
    serving: ModelConfig | None = None,
) -> ImproveState:
    """Round k's learning half (training.improve.learn_round): train, evaluate (with `serving`, see
    training.improve.evaluation_model), gate; returns the state."""
    from explorer.models import Embedder, load_model
    from training.improve import evaluation_model, learn_round

    model = load_model(evaluation_model(serving, train))
    return learn_round(
        state,
        k,
        improve_dir,
        [Path(r) for r in runs],
        train,
        model,
        Embedder().similarity,
        seconds,
        datasets=[Path(d) for d in datasets or ()],
        sites=sites or (),
        browser=browser,
    )


def learn_in_task(
    state: ImproveState,
    k: int,
    improve_dir: Path,
    runs: Sequence[Path],
    train: TrainConfig,
    seconds: float,
    *,
    datasets: Sequence[Path] = (),
    sites: Sequence[SiteConfig] = (),
    browser: BrowserConfig | None = None,
    serving: ModelConfig | None = None,
) -> ImproveState:
    """The flow's learn step: `learn_task`, a retried Prefect task."""
    return learn_task(
        state, k, str(improve_dir), [str(r) for r in runs], train, seconds, [str(d) for d in datasets], list(sites),
        browser, serving,
    )  # fmt: skip


@flow(name="train_round", log_prints=True)
def train_round(
    improve_dir: str, runs: list[str], train: TrainConfig | None = None, heldout_share: float = 0.3
) -> ImproveState:
    """Learn from runs explored elsewhere as the next round of the improve run `improve_dir` (continuing its
    improve.json, or starting one)."""
    from explorer.store import RunStore
    from training.improve import new_state

    train = train or TrainConfig()
    if ImproveState.path_in(improve_dir).exists():
        state = ImproveState.load(improve_dir)
    else:
        state = new_state([RunStore.site_of(r) for r in runs], improve_dir, ExploreConfig(), train, heldout_share)
    state = learn_task(state, len(state.rounds) + 1, improve_dir, runs, train)
    publish_rounds(state)
    return state
