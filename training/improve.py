"""Self-improvement rounds, the one loop (the Prefect flow `flows.improve.self_improve` wraps it and passes its
own explore step):

    explore (with the adopted adapter) -> dataset -> train (failure views + task views)
        -> evaluate (held-out pages; dev tasks, paired) -> gate -> adopt

The run's state is `improve.json` (training.state.ImproveState), rewritten after every round; running the same
improve folder again resumes it: finished rounds stay, an interrupted round's explorations continue where they
stopped, and its training resumes from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.errors import ConfigError, SiteUnreachable
from explorer.models import ModelConfig
from training.adapters import AdapterCard, round_dir, write_card
from training.config import TrainConfig
from training.evaluate import EvalReport, evaluate, heldout_floor, run_cases
from training.gate import GateDecision, decide, gate
from training.paired import PairedSR, paired_sr
from training.samples import Sample, load_samples, split_by_page
from training.sft import ROLES, SFTExample, data_hash, sft_examples
from training.state import ImproveState, RoundResult
from training.tasks import TaskEvalConfig, evaluate_tasks
from training.train import TrainResult, train_adapter
from training.views import dataset_examples, view_counts, weighted

TASK_VIEWS = ("actor", "qa")  # views trained from the round's dataset (the others from its failures)
ExploreStep = Callable[[Sequence[SiteConfig], Path, ExploreConfig, BrowserConfig, ModelConfig], Awaitable[list[Path]]]


async def explore_sites(
    sites: Sequence[SiteConfig], runs_dir: Path, explore: ExploreConfig, browser: BrowserConfig, model: ModelConfig
) -> list[Path]:
    """Explore every site, one after the other, with `model` (its adapter, if any) into `runs_dir/<site>/`;
    continues a site's unfinished run. Returns the run folders (the default explore step of `run_improvement`)."""
    from explorer.run import run_exploration

    out = []
    for site in sites:
        run = runs_dir / site.name
        again = (run / "run.sqlite").exists()
        await run_exploration(
            site, explore, browser, model, runs_dir=runs_dir, run_id=site.name, resume_run=site.name if again else None
        )
        out.append(run)
    return out


def train_round(
    train: Sequence[Sample], k: int, improve_dir: str | Path, cfg: TrainConfig, datasets: Sequence[Path] = ()
):
    """Train round k's adapter on the failure views of `train` and the task views (actor, qa) of `datasets`, each
    view weighted by `cfg.weights` and `cfg.action_weights`: (folder, TrainResult, examples); (None, None,
    examples) when there is nothing to train on."""
    examples = sft_examples(list(train), tuple(v for v in cfg.views if v in ROLES))
    tasks = tuple(v for v in cfg.views if v in TASK_VIEWS)
    if tasks and datasets:
        examples += dataset_examples(datasets, tasks)
    examples = weighted(examples, cfg.weights, cfg.seed, cfg.action_weights)
    if not examples:
        return None, None, examples
    folder = round_dir(improve_dir, k)
    return folder, train_adapter(examples, cfg, folder), examples


def evaluate_adapter(
    model, heldout: Sequence[Sample], similarity, adapter: str | Path | None, base_wrong=None, *, runs=None, low=None
):
    """Held-out metrics of `model` with the adapter folder `adapter` loaded (None: the base model); `runs`:
    `run_cases` of all samples (the pages the Judger knows), `low`: the held-out floor, if already measured."""
    name = None if adapter is None else model.load_adapter(adapter, name=Path(adapter).name, activate=False)
    return evaluate(model, heldout, similarity, name, base_wrong=base_wrong, runs=runs, floor_of=low)


def _shown(path: Path | str | None, root: Path) -> str | None:
    """A folder as improve.json names it: relative to the improve run when inside it."""
    if path is None:
        return None
    path = Path(path)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def new_state(
    sites: Sequence[SiteConfig],
    improve_dir: str | Path,
    explore: ExploreConfig,
    train: TrainConfig,
    heldout_share: float,
    start_adapter: str | Path | None = None,
    task_eval: TaskEvalConfig | None = None,
) -> ImproveState:
    """The state of an improve run with no rounds yet (checks the inputs; creates the folder); the arguments are
    those of `open_state`, which opens a run's state whether or not it exists yet."""
    names = [s.name for s in sites]
    if len(set(names)) != len(names):
        raise ConfigError(f"site names must differ (they name the run folders): {names}")
    if not 0 <= heldout_share < 1:
        raise ConfigError(f"heldout share {heldout_share}: give a share in [0, 1)")
    root = Path(improve_dir)
    root.mkdir(parents=True, exist_ok=True)
    return ImproveState(
        improve_id=root.name,
        base_model=train.base_model,
        sites=names,
        heldout_share=heldout_share,
        train_config=train,
        explore_config=explore,
        adopted_adapter=_shown(start_adapter, root),
        task_eval=task_eval,
    )


def open_state(
    sites: Sequence[SiteConfig],
    improve_dir: str | Path,
    explore: ExploreConfig,
    train: TrainConfig,
    heldout_share: float,
    start_adapter: str | Path | None = None,
    task_eval: TaskEvalConfig | None = None,
) -> ImproveState:
    """The improve run's state: resumed from its improve.json when there is one (same sites and base model), else
    new (`new_state`)."""
    path = ImproveState.path_in(improve_dir)
    if not path.exists():
        return new_state(sites, improve_dir, explore, train, heldout_share, start_adapter, task_eval)
    state = ImproveState.load(path)
    names = [s.name for s in sites]
    if state.sites != names or state.base_model != train.base_model:
        raise ConfigError(
            f"{path} is an improve run of {state.sites} on {state.base_model}, not of {names} on {train.base_model}:"
            " pass another run id to start a new run"
        )
    return state


def learn_round(
    state: ImproveState,
    k: int,
    improve_dir: str | Path,
    new_runs: Sequence[Path],
    train: TrainConfig,
    model,
    similarity,
    seconds: float = 0.0,
    *,
    datasets: Sequence[Path] = (),
    sites: Sequence[SiteConfig] = (),
    browser: BrowserConfig | None = None,
) -> ImproveState:
    """The learning half of round k, after its runs were explored (and `datasets` built from them): split every
    run so far by page, train on the failures of the training pages and the tasks of `datasets`, evaluate base /
    current / new on the held-out pages and current / new on the dev tasks (`state.task_eval` on `sites`), gate,
    write the card; appends the round to `state`, rewrites improve.json and returns the state."""
    t0 = time.perf_counter()
    root = Path(improve_dir)
    current = state.adopted(root)
    runs = [root / r for done in state.rounds for r in done.explore_runs] + [Path(r) for r in new_runs]
    samples = load_samples(runs)
    fresh = [s for s in samples if Path(s.run) in {Path(r) for r in new_runs}]
    train_set, heldout = split_by_page(samples, state.heldout_share, seed=train.seed)
    every_dataset = [root / d for done in state.rounds for d in done.datasets] + [Path(d) for d in datasets]
    folder, result, examples = train_round(train_set, k, root, train, every_dataset)
    runs_seen = run_cases(samples)  # every page of every run, for the Judger; the floor's constants
    low = heldout_floor(heldout, similarity, runs_seen) if heldout else None
    base = evaluate_adapter(model, heldout, similarity, None, runs=runs_seen, low=low) if heldout else None
    before = after = decision = None
    if base is not None:
        before = (
            base
            if current is None
            else evaluate_adapter(model, heldout, similarity, current, set(base.wrong), runs=runs_seen, low=low)
        )
        if folder is not None:
            after = evaluate_adapter(model, heldout, similarity, folder, set(base.wrong), runs=runs_seen, low=low)
            decision = gate(before, after)
    paired = None
    if folder is not None and state.task_eval is not None and state.task_eval.targets(sites):
        where = root / "evals" / f"round-{k}"
        cur = evaluate_tasks(model, current, state.task_eval, sites, where / "before", browser)
        paired = paired_sr(cur, evaluate_tasks(model, folder, state.task_eval, sites, where / "after", browser))
        decision = decide(decision, paired)
    if decision is None:
        why = "no training examples" if folder is None else "no held-out transitions or dev tasks to evaluate on"
        decision = GateDecision(adopted=False, reason=f"{why}: keeping the current model", before=0.0, after=0.0)
    if folder is not None:
        _card(folder, k, train, current, examples, fresh, heldout, before, after, result, decision, paired)
    state.rounds.append(
        RoundResult(
            round=k,
            explored_with=_shown(current, root),
            explore_runs=[_shown(r, root) for r in new_runs],
            datasets=[_shown(d, root) for d in datasets],
            failures=sum(s.kind == "failure" for s in fresh),
            transitions=len(fresh),
            train_examples=len(examples),
            examples_by_view=view_counts(examples),
            heldout=len(heldout),
            floor=low,
            base=_kept(base),
            before=_kept(before),
            after=_kept(after),
            tasks=paired,
            adopted=decision.adopted,
            reason=decision.reason,
            adapter=_shown(folder, root),
            train=None if result is None else result.metrics(),
            seconds=round(seconds + time.perf_counter() - t0, 1),
        )
    )
    state.adopted_adapter = _shown(folder if decision.adopted else current, root)
    state.save(root)
    return state


LearnStep = Callable[..., ImproveState]  # learn_round's arguments after (model, similarity), its keywords too
DatasetStep = Callable[[Sequence[Path], Path], Path]  # (the round's runs, out folder) -> the dataset folder


def evaluation_model(serving: ModelConfig | None, train: TrainConfig) -> ModelConfig:
    """The model config a round's evaluations load: `serving` without its adapter (each evaluation loads the one
    it compares), or the local base model of `train`."""
    return (serving or ModelConfig(model=train.base_model)).model_copy(update={"adapter": None})


def local_learner(serving: ModelConfig | None = None) -> LearnStep:
    """`learn_round` with the evaluation model (`serving`, its adapter dropped; default: the local base model) and
    the embedder loaded on first use and kept for later rounds. With an openai `serving`, evaluations run on the
    server and each adapter is hot-loaded into it; training stays local (peft)."""
    loaded: dict = {}

    def learn(state, k, improve_dir, runs, train, seconds, **kw):
        if not loaded:
            from explorer.models import Embedder, load_model

            loaded.update(model=load_model(evaluation_model(serving, train)), similarity=Embedder().similarity)
        return learn_round(state, k, improve_dir, runs, train, loaded["model"], loaded["similarity"], seconds, **kw)

    return learn


async def run_improvement(
    sites: Sequence[SiteConfig],
    rounds: int,
    improve_dir: str | Path,
    *,
    explore: ExploreConfig,
    train: TrainConfig,
    browser: BrowserConfig | None = None,
    heldout_share: float = 0.3,
    start_adapter: str | Path | None = None,
    task_eval: TaskEvalConfig | None = None,
    serving: ModelConfig | None = None,
    explore_step: ExploreStep = explore_sites,
    dataset_step: DatasetStep | None = None,
    learn_step: LearnStep | None = None,
    on_round: Callable[[ImproveState], object] | None = None,  # may be async
) -> ImproveState:
    """Rounds of explore -> dataset -> train -> evaluate -> gate until the run has `rounds` of them (an existing
    improve.json in `improve_dir` is resumed); writes improve.json after each round, calls `on_round(state)`,
    returns the state. `explore_step(sites, round_dir, explore, browser, model)` explores a round (default:
    `explore_sites`); `dataset_step(runs, out)` builds the dataset the actor and qa views train on (None: no task
    views); `learn_step(state, k, improve_dir, runs, train, seconds, datasets=, sites=, browser=)` learns from it
    (default: `learn_round` with the base model loaded once in this process). `task_eval`: the dev tasks the
    rounds are gated on (None: the held-out Predictor alone). `serving`: the model that explores and is evaluated
    (default: the local base model; an openai config has the server hot-load each round's adapter), while
    training runs here on `train.base_model`, which must be the served model's weights."""
    if rounds < 1:
        raise ConfigError(f"--rounds {rounds}: run at least one round")
    root = Path(improve_dir)
    created = not root.exists()
    state = open_state(sites, root, explore, train, heldout_share, start_adapter, task_eval)
    browser = browser or BrowserConfig()
    learn_step = learn_step or local_learner(serving)
    serving = serving or ModelConfig(model=train.base_model)
    wants_tasks = dataset_step is not None and any(v in TASK_VIEWS for v in train.views)
    for k in range(len(state.rounds) + 1, rounds + 1):
        t0 = time.perf_counter()
        current = state.adopted(root)
        explore_model = serving.model_copy(update={"adapter": None if current is None else str(current)})
        try:
            new_runs = await explore_step(sites, root / "explore" / f"round-{k}", explore, browser, explore_model)
        except SiteUnreachable as exc:
            if created and not state.rounds:  # nothing was done: leave no empty improve run behind
                shutil.rmtree(root, ignore_errors=True)
                raise
            raise SiteUnreachable(f"{exc} {len(state.rounds)} rounds are done and kept in {root}: run the same "
                                  f"command with --run-id {root.name} to resume") from None  # fmt: skip
        datasets = []
        if wants_tasks:
            datasets.append(await asyncio.to_thread(dataset_step, new_runs, root / "datasets" / f"round-{k}"))
        # in a thread (contextvars copied: a Prefect task sees its flow run), so the event loop stays responsive
        state = await asyncio.to_thread(
            learn_step,
            state,
            k,
            root,
            new_runs,
            train,
            time.perf_counter() - t0,
            datasets=datasets,
            sites=list(sites),
            browser=browser,
        )
        if on_round is not None and inspect.isawaitable(done := on_round(state)):
            await done
    return state


def _kept(report: EvalReport | None) -> EvalReport | None:
    """The report as improve.json keeps it: without the ids of the transitions it got wrong."""
    return None if report is None else report.model_copy(update={"wrong": []})


def _card(
    folder: Path,
    k: int,
    cfg: TrainConfig,
    parent: Path | None,
    examples: list[SFTExample],
    fresh: list[Sample],
    heldout: Sequence[Sample],
    before: EvalReport | None,
    after: EvalReport | None,
    result: TrainResult,
    decision: GateDecision,
    paired: PairedSR | None = None,
) -> None:
    parent_round = int(parent.name.rsplit("-", 1)[-1]) if parent and parent.name.startswith("round-") else None
    write_card(
        folder,
        AdapterCard(
            round=k,
            base_model=cfg.base_model,
            parent_round=parent_round,
            data_hash=data_hash(examples),
            counts={
                "train_examples": len(examples),
                "selector_examples": sum(e.role == "selector" for e in examples),
                "predictor_examples": sum(e.role == "predictor" for e in examples),
                "actor_examples": sum(e.role == "actor" for e in examples),
                "qa_examples": sum(e.role == "qa" for e in examples),
                "failures": sum(s.kind == "failure" for s in fresh),
                "transitions": len(fresh),
                "heldout": len(heldout),
            },
            metrics={
                "before": None if before is None else before.model_dump(),
                "after": None if after is None else after.model_dump(),
                "train": result.metrics(),
                "tasks": None if paired is None else paired.model_dump(),
            },
            adopted=decision.adopted,
            reason=decision.reason,
        ),
    )
