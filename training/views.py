"""Training views of datasets: what `scalehop train` and the improve rounds learn from.

- `actor`: the Actor acting on tasks that reverse construction built (`scalehop dataset build`): every single-step
  row is one example, every step of a multi-step row one more (the steps before it are its history), and every
  task that kept its goal page one more, `ACTION: stop` on that page after all its actions (`ACTION: stop
  "answer"` for an information-seeking task, `synthesis.answers`). The prompt
  is the live Actor's own (`explorer.roles.actor.actor_question`, via `evals.shots.demonstrations`), the answer
  continues the prefill `ACTION:` with ` click [12]\\nREASON: ...`, which `parse_action` reads back.
- `qa`: page-QA rows as the Actor finishing an information-seeking task, `ACTION: stop "answer"`.
- `selector`, `predictor`: the failure-sample views of `training.sft`, from the runs the dataset was built from
  (its stats.json names them; runs that are gone are skipped).

Per-view weights repeat a view's examples: weight 2 trains on each twice, 0.5 on a seeded half of them. Per-action
weights (`action_weights`) repeat the Actor examples (actor and qa views) of one action on top: exploration
demonstrates clicks far more often than typing or answering, and a small model learns the majority.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from evals.shots import Demonstration, load_demonstrations
from explorer.errors import ConfigError
from explorer.roles.actor import PREFILL as ACTOR_PREFILL
from explorer.roles.actor import actor_question
from training.samples import load_samples
from training.sft import ROLES, SFTExample, sft_examples

VIEWS = ("actor", "qa", "selector", "predictor")
_VIEW_OF = {"single_step": "actor", "multi_step": "actor", "page_qa": "qa"}  # dataset split -> view


def demonstration_example(demo: Demonstration, view: str, source: str) -> SFTExample:
    """One Actor demonstration as an SFT example of `view` (its prompt and the answer after `ACTION:`)."""
    system, _ = actor_question("", "", (), (), ())
    if not demo.answer.startswith(ACTOR_PREFILL):
        raise ValueError(f"{source}: an Actor answer starts with {ACTOR_PREFILL!r}, not {demo.answer[:20]!r}")
    return SFTExample(
        role=view,
        messages=[system, {"role": "user", "content": demo.prompt}],
        prefill=ACTOR_PREFILL,
        completion=demo.answer[len(ACTOR_PREFILL) :],
        source=source,
    )


def dataset_runs(folder: str | Path) -> list[Path]:
    """The run folders a dataset was built from (its stats.json), those still on disk."""
    stats = Path(folder) / "stats.json"
    if not stats.is_file():
        return []
    runs = [Path(r["dir"]) for r in json.loads(stats.read_text()).get("runs", []) if r.get("dir")]
    return [r for r in runs if (r / "run.sqlite").is_file()]


def dataset_examples(folders: Sequence[str | Path], views: Sequence[str]) -> list[SFTExample]:
    """The SFT examples of `views` from the datasets in `folders` (see the module doc), in folder order."""
    unknown = sorted(set(views) - set(VIEWS))
    if unknown:
        raise ConfigError(f"--views {','.join(unknown)}: unknown; choose among {', '.join(VIEWS)}")
    out: list[SFTExample] = []
    for folder in folders:
        if {"actor", "qa"} & set(views):
            for i, demo in enumerate(load_demonstrations(folder)):
                if _VIEW_OF[demo.split] in views:
                    out.append(demonstration_example(demo, _VIEW_OF[demo.split], f"{folder}#{i}"))
        roles = tuple(v for v in views if v in ROLES)
        if roles and (runs := dataset_runs(folder)):
            out += sft_examples(load_samples(runs), roles)
    return out


def demonstrated_action(example: SFTExample) -> str:
    """The action an Actor example demonstrates: its verb (`click`, `type`, ...), `answer` for a stop with an
    answer; "" for an example that is not the Actor's (the Selector's and the Predictor's)."""
    if example.prefill != ACTOR_PREFILL:
        return ""
    verb = (example.completion.split() or [""])[0].lower()
    return "answer" if verb == "stop" and example.completion.split("\n")[0].strip() != "stop" else verb


def weighted(
    examples: Iterable[SFTExample],
    weights: Mapping[str, float],
    seed: int = 0,
    action_weights: Mapping[str, float] | None = None,
) -> list[SFTExample]:
    """Each view's examples repeated by its weight (default 1), an Actor example (actor and qa views) also by the
    weight of the action it demonstrates (`action_weights`, default 1; a qa example is an `answer`): whole repeats,
    then a seeded share for the rest, per view and weighted action."""
    action_weights = action_weights or {}
    groups: dict[tuple[str, str], list[SFTExample]] = {}
    for ex in examples:
        kind = demonstrated_action(ex) if action_weights else ""
        groups.setdefault((ex.role, kind if action_weights.get(kind, 1.0) != 1.0 else ""), []).append(ex)
    rng = random.Random(seed)
    out: list[SFTExample] = []
    for (view, kind), group in groups.items():
        weight = weights.get(view, 1.0) * action_weights.get(kind, 1.0)
        whole, part = int(weight), weight - int(weight)
        out += group * whole + rng.sample(group, round(part * len(group)))
    return out


def view_counts(examples: Iterable[SFTExample]) -> dict[str, int]:
    """How many examples of each view."""
    return dict(Counter(ex.role for ex in examples))


def train_on_datasets(folders: Sequence[str | Path], cfg, out: str | Path, progress: bool = False):
    """Train one adapter on the views `cfg.views` (weighted by `cfg.weights` and `cfg.action_weights`) of the
    datasets in `folders`, save it with its card in `out`: (TrainResult, view counts before weighting). Nothing
    to train on is a ConfigError naming the folders and what to build."""
    from training.adapters import AdapterCard, write_card
    from training.sft import data_hash
    from training.train import train_adapter

    examples = dataset_examples(folders, cfg.views)
    counts = view_counts(examples)
    if not examples:
        shown = " ".join(str(f) for f in folders)
        raise ConfigError(
            f"{shown}: no {'/'.join(cfg.views)} examples there: build a dataset with `scalehop dataset build RUN...`"
            " (the actor view reads its single- and multi-step tasks, selector/predictor its runs' failures)"
        )
    chosen = weighted(examples, cfg.weights, cfg.seed, cfg.action_weights)
    result = train_adapter(chosen, cfg, out, progress=progress)
    card = AdapterCard(
        round=0,
        base_model=cfg.base_model,
        parent_round=None,
        data_hash=data_hash(chosen),
        counts={f"{view}_examples": n for view, n in counts.items()} | {"train_examples": len(chosen)},
        metrics={
            "train": result.metrics(),
            "datasets": [str(f) for f in folders],
            "weights": dict(cfg.weights),
            "action_weights": dict(cfg.action_weights),
        },
        adopted=False,
        reason="trained by `scalehop train`, not gated: measure it with `scalehop eval ... --adapters base,<dir>`",
    )
    write_card(out, card)
    return result, counts
