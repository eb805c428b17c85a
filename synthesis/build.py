"""`build_dataset`: run folders in, a dataset folder out. Builders -> generator -> scrub -> gates -> information-seeking
tasks from the kept rows (`synthesis.answers`) -> export.

Output layout (default `<first run>/dataset/`): `hf/` (save_to_disk), `parquet/<split>.parquet`, `README.md`
(the card) and `stats.json` (synthesis.stats.DatasetStats; keys documented in datasets/README.md).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from explorer.config import BrowserConfig
from explorer.models import ChatModel
from synthesis.answers import answer_tasks
from synthesis.export import push, render_card, to_dataset_dict, write_data
from synthesis.gates import check_format, dedup
from synthesis.generators import ModelGenerator
from synthesis.multi_step import build_multi_step
from synthesis.page_qa import build_page_qa
from synthesis.recipe import DatasetRecipe
from synthesis.records import TASK_TYPES, Drop, MultiStepTask, Task
from synthesis.replay import replay_gate
from synthesis.scrub import Scrubber, site_secrets
from synthesis.single_step import build_single_step
from synthesis.source import RunSource, open_run
from synthesis.stats import DatasetStats, dataset_stats


@dataclass
class BuildResult:
    """Where the dataset went, what it holds (rows per task type), and its stats.json."""

    out: Path
    counts: dict[str, int]
    stats: DatasetStats
    drops: list[Drop] = field(default_factory=list)


def build_dataset(
    run_dirs: list[str | Path],
    recipe: DatasetRecipe | None = None,
    out: str | Path | None = None,
    *,
    browser: BrowserConfig | None = None,
    model: ChatModel | None = None,
) -> BuildResult:
    """Build the recipe's tasks from the runs and write the dataset folder (see the module doc).

    `model` overrides loading `recipe.model` for the model generator (a process that already holds one).
    Replay runs its own event loop: call this from synchronous code (or a worker thread).
    """
    recipe = recipe or DatasetRecipe()
    if not run_dirs:
        raise ValueError("build_dataset needs at least one run folder")
    out = Path(out) if out else Path(run_dirs[0]) / "dataset"
    t_start = time.perf_counter()
    sources = [open_run(d) for d in run_dirs]
    try:
        seconds: dict[str, float] = {}
        skipped: Counter = Counter()
        tasks = _draft(sources, recipe, skipped, seconds)
        model_id = None
        if recipe.generator == "model" and tasks:
            t0 = time.perf_counter()
            if model is None:
                from explorer.models import load_model

                model = load_model(recipe.model)
            tasks = ModelGenerator(model, recipe.model.max_new_tokens).write(tasks)
            model_id = model.model_id
            seconds["generate"] = time.perf_counter() - t0
        drafts, fallbacks = Counter(t.task_type for t in tasks), sum(t.fallback for t in tasks)
        scrubbers = {i: Scrubber(site_secrets(s.site, recipe.gates.scrub_env)) for i, s in enumerate(sources)}
        tasks = [scrubbers[t.source].task(t) for t in tasks]
        tasks, format_drops = check_format(tasks, recipe.gates)
        tasks, dedup_drops = dedup(tasks, recipe.gates)
        replay_drops: list[Drop] = []
        multi = [t for t in tasks if isinstance(t, MultiStepTask)]
        checked = Counter(t.site for t in multi) if recipe.gates.replay else Counter()
        if recipe.gates.replay and multi:
            t0 = time.perf_counter()
            sites = {i: s.site for i, s in enumerate(sources)}
            deltas = {i: recipe.gates.delta or s.delta for i, s in enumerate(sources)}
            lookups = {i: s.lookup for i, s in enumerate(sources)}
            kept, replay_drops = asyncio.run(replay_gate(multi, sites, lookups, deltas, browser or BrowserConfig()))
            tasks = [t for t in tasks if not isinstance(t, MultiStepTask)] + kept
            seconds["replay"] = time.perf_counter() - t0
        answer_drops: list[Drop] = []
        if recipe.answer_tasks:  # from the kept rows: each path replays once; the question is template text
            asked, answer_drops = check_format(answer_tasks(tasks), recipe.gates)
            tasks, twins = dedup(tasks + asked, recipe.gates)
            answer_drops += twins
        scrubbed = sum((s.counts for s in scrubbers.values()), Counter())
        drops = format_drops + dedup_drops + replay_drops + answer_drops
        stats = dataset_stats(sources, recipe, tasks, drafts, skipped, drops, checked, scrubbed, fallbacks, model_id)
        t0 = time.perf_counter()
        dd = to_dataset_dict(tasks, {i: s.store.blob for i, s in enumerate(sources)}, recipe.task_types)
        out.mkdir(parents=True, exist_ok=True)
        write_data(dd, out)
        seconds["export"] = time.perf_counter() - t0
        seconds["total"] = time.perf_counter() - t_start
        stats.seconds, stats.out = {k: round(v, 3) for k, v in seconds.items()}, str(out)
        stats.save(out)
        (out / "README.md").write_text(render_card(list(dd), stats.model_dump(mode="json")))
        if recipe.push_to_hub:
            push(dd, recipe.push_to_hub, out)
        return BuildResult(out, stats.counts, stats, drops)
    finally:
        for source in sources:
            source.close()


def _draft(sources: list[RunSource], recipe: DatasetRecipe, skipped: Counter, seconds: dict) -> list[Task]:
    """Every builder of the recipe over every run; seconds per builder."""
    builders = {
        "single_step": lambda s: build_single_step(s, recipe, skipped),
        "multi_step": lambda s: build_multi_step(s, recipe, skipped),
        "page_qa": lambda s: build_page_qa(s, recipe),
    }
    tasks: list[Task] = []
    for task_type in (t for t in TASK_TYPES if t in recipe.task_types):
        t0 = time.perf_counter()
        for i, source in enumerate(sources):
            tasks += [t.model_copy(update={"source": i}) for t in builders[task_type](source)]
        seconds[task_type] = time.perf_counter() - t0
    return tasks
