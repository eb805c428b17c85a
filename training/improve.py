"""Self-improvement rounds as plain functions (a Prefect flow can wrap each as a task):

    explore_round (with the adopted adapter) -> failures -> train_round -> evaluate_adapter -> gate -> explore again

Layout of an improve run `<runs_dir>/<improve_id>/`:
  explore/round-<k>/<site>/   normal run folders (flows.explore.run_exploration), explored with the adapter in use
  adapters/round-<k>/         peft LoRA folder + card.json (see training.adapters)
  improve.json                the summary below, rewritten after every round

improve.json keys (stable; reports read them):
  improve_id, base_model, sites [names], heldout_share, train_config {TrainConfig}, explore_config {ExploreConfig}
  rounds: list of {
    round            k (1-based)
    explored_with    adapter folder (relative) used to explore this round, or null for the base model
    explore_runs     run folders of this round (relative)
    failures         failure samples (j=0) explored this round
    transitions      transitions explored this round (j=0 and j=1)
    train_examples   SFT examples trained on (failures of training pages, all rounds so far)
    heldout          held-out transitions (pages never trained on, all rounds so far)
    floor            {accuracy, answer, answers}: the best know-nothing answer on the held-out transitions
                     (training.evaluate.heldout_floor), or null when none are held out; a gain counts only above it
    base / before / after   EvalReport dicts: the base model, the model in use before this round, the new adapter
                     (predictor_accuracy, predictor_correct, predictor_total, floor, floor_answer, floor_answers,
                     selector_surprise, selector_picks, random_surprise, seconds)
    adopted, reason  the gate's decision (adopted only above the floor and without regression)
    adapter          this round's adapter folder (relative), or null when nothing was trained
    train            TrainResult.metrics() or null
    seconds          wall time of the round
  }
  adopted_adapter  the adapter folder in use after the last round (relative), or null for the base model
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.errors import ConfigError
from explorer.models import ModelConfig
from training.adapters import AdapterCard, round_dir, write_card
from training.config import TrainConfig
from training.evaluate import EvalReport, evaluate, heldout_floor, run_cases
from training.gate import GateDecision, gate
from training.samples import Sample, load_samples, split_by_page
from training.sft import SFTExample, data_hash, sft_examples
from training.train import TrainResult, train_adapter


async def explore_round(
    sites: Sequence[SiteConfig],
    k: int,
    improve_dir: str | Path,
    explore: ExploreConfig,
    browser: BrowserConfig,
    model: ModelConfig,
) -> list[Path]:
    """Explore every site with `model` (its adapter, if any) into `explore/round-<k>/<site>/`; resumes a
    round's unfinished runs. Returns the run folders."""
    from flows.explore import run_exploration

    runs_dir = Path(improve_dir) / "explore" / f"round-{k}"
    out = []
    for site in sites:
        run = runs_dir / site.name
        again = (run / "run.sqlite").exists()
        await run_exploration(
            site, explore, browser, model, runs_dir=runs_dir, run_id=site.name, resume_run=site.name if again else None
        )
        out.append(run)
    return out


def train_round(train: Sequence[Sample], k: int, improve_dir: str | Path, cfg: TrainConfig):
    """Train round k's adapter on the SFT views of the failures in `train`: (folder, TrainResult, examples);
    (None, None, examples) when there is nothing to train on."""
    examples = sft_examples(list(train), cfg.tasks)
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


def _public(report: EvalReport | None) -> dict | None:
    return None if report is None else report.model_dump(exclude={"wrong"})


def _shown(path: Path | str | None, root: Path) -> str | None:
    """A folder as improve.json names it: relative to the improve run when inside it."""
    if path is None:
        return None
    path = Path(path)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def new_summary(
    sites: Sequence[SiteConfig],
    improve_dir: str | Path,
    explore: ExploreConfig,
    train: TrainConfig,
    heldout_share: float,
    start_adapter: str | Path | None = None,
) -> dict:
    """The improve.json of a run with no rounds yet (checks the inputs; creates the folder)."""
    names = [s.name for s in sites]
    if len(set(names)) != len(names):
        raise ConfigError(f"site names must differ (they name the run folders): {names}")
    root = Path(improve_dir)
    root.mkdir(parents=True, exist_ok=True)
    return {
        "improve_id": root.name,
        "base_model": train.base_model,
        "sites": names,
        "heldout_share": heldout_share,
        "train_config": train.model_dump(mode="json"),
        "explore_config": explore.model_dump(mode="json"),
        "rounds": [],
        "adopted_adapter": _shown(start_adapter, root),
    }


def adopted(summary: dict, improve_dir: str | Path) -> Path | None:
    """The adapter folder in use after the summary's last round (None: the base model)."""
    shown = summary["adopted_adapter"]
    return None if shown is None else Path(improve_dir) / shown  # an absolute path stays as it is


def learn_round(
    summary: dict,
    k: int,
    improve_dir: str | Path,
    new_runs: Sequence[Path],
    train: TrainConfig,
    model,
    similarity,
    seconds: float = 0.0,
) -> dict:
    """The learning half of round k, after its runs were explored: split every run so far by page, train on the
    failures of the training pages, evaluate base / current / new on the held-out pages, gate, write the card;
    appends the round to `summary`, rewrites improve.json and returns the summary."""
    t0 = time.perf_counter()
    root = Path(improve_dir)
    current = adopted(summary, root)
    runs = [root / r for done in summary["rounds"] for r in done["explore_runs"]] + [Path(r) for r in new_runs]
    samples = load_samples(runs)
    fresh = [s for s in samples if Path(s.run) in {Path(r) for r in new_runs}]
    train_set, heldout = split_by_page(samples, summary["heldout_share"], seed=train.seed)
    folder, result, examples = train_round(train_set, k, root, train)
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
    if decision is None:
        why = "no training examples" if folder is None else "no held-out transitions to evaluate on"
        decision = GateDecision(adopted=False, reason=f"{why}: keeping the current model", before=0.0, after=0.0)
    if folder is not None:
        _card(folder, k, train, current, examples, fresh, heldout, before, after, result, decision)
    summary["rounds"].append(
        {
            "round": k,
            "explored_with": _shown(current, root),
            "explore_runs": [_shown(r, root) for r in new_runs],
            "failures": sum(s.kind == "explore" for s in fresh),
            "transitions": len(fresh),
            "train_examples": len(examples),
            "heldout": len(heldout),
            "floor": None if low is None else low.model_dump(),
            "base": _public(base),
            "before": _public(before),
            "after": _public(after),
            "adopted": decision.adopted,
            "reason": decision.reason,
            "adapter": _shown(folder, root),
            "train": None if result is None else result.metrics(),
            "seconds": round(seconds + time.perf_counter() - t0, 1),
        }
    )
    summary["adopted_adapter"] = _shown(folder if decision.adopted else current, root)
    (root / "improve.json").write_text(json.dumps(summary, indent=2))
    return summary


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
) -> dict:
    """R rounds of explore -> train -> evaluate -> gate; writes improve.json after each round and returns it."""
    from explorer.models import Embedder, load_model

    if rounds < 1:
        raise ConfigError(f"--rounds {rounds}: run at least one round")
    summary = new_summary(sites, improve_dir, explore, train, heldout_share, start_adapter)
    browser = browser or BrowserConfig()
    model = load_model(ModelConfig(model=train.base_model))
    similarity = Embedder().similarity
    for k in range(1, rounds + 1):
        t0 = time.perf_counter()
        current = adopted(summary, improve_dir)
        explore_model = ModelConfig(model=train.base_model, adapter=None if current is None else str(current))
        new_runs = await explore_round(sites, k, improve_dir, explore, browser, explore_model)
        learn_round(summary, k, improve_dir, new_runs, train, model, similarity, time.perf_counter() - t0)
    return summary


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
                "failures": sum(s.kind == "explore" for s in fresh),
                "transitions": len(fresh),
                "heldout": len(heldout),
            },
            metrics={"before": _public(before), "after": _public(after), "train": result.metrics()},
            adopted=decision.adopted,
            reason=decision.reason,
        ),
    )
