"""`stats.json` of a built dataset, typed: what each gate did, rows per task type and site, the runs behind it.

Its top-level keys are stable and documented in datasets/README.md; `schema` is that key layout's version,
`schema_version` the artifact's (see explorer.artifact).
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from explorer.artifact import Artifact
from synthesis.recipe import DatasetRecipe
from synthesis.records import Drop, Task
from synthesis.source import RunSource

STATS_SCHEMA = 1


class RunRef(BaseModel):
    """A run the dataset was built from, and the model that explored it."""

    run_id: str
    site: str
    dir: str
    round: int
    model_id: str
    adapter_id: str


class Dropped(BaseModel):
    """What a filtering gate removed."""

    dropped: int = 0


class ReplayStats(BaseModel):
    """Replay validation of the multi-step tasks."""

    enabled: bool
    checked: int
    passed: int
    dropped: int
    pass_rate: float | None  # None: nothing was checked
    by_site: dict[str, float | None] = {}  # site -> pass rate of its checked tasks
    causes: dict[str, int] = {}  # drops grouped by the test that failed (synthesis.replay: element missing, ...)


class GateStats(BaseModel):
    """Every gate's numbers; `scrub`: replacements made per kind (secret, email, phone)."""

    format: Dropped
    dedup: Dropped
    replay: ReplayStats
    scrub: dict[str, int]


class DatasetStats(Artifact):
    """stats.json: the recipe, the runs, rows kept per task type and site, drafts, skips, gates and timings."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)
    FILE = "stats.json"
    SCHEMA = 1

    layout: int = Field(STATS_SCHEMA, alias="schema")
    recipe: str
    generator: str
    model: str | None  # the model generator's model id (None: template text)
    runs: list[RunRef]
    counts: dict[str, int]  # rows kept per task type
    by_site: dict[str, dict[str, int]]  # site -> task type -> rows kept
    drafts: dict[str, int]  # tasks the builders made per task type, before the gates (not the answer tasks)
    skipped: dict[str, int]  # records the builders left out, by reason
    fallbacks: int  # rows where the model generator's answer was unusable
    gates: GateStats
    drops: list[Drop]
    seconds: dict[str, float] = {}  # per builder, generate, replay, export, total
    out: str = ""  # the output folder


def dataset_stats(
    sources: list[RunSource],
    recipe: DatasetRecipe,
    tasks: list[Task],
    drafts: Counter,
    skipped: Counter,
    drops: list[Drop],
    checked: Counter,
    scrubbed: Counter,
    fallbacks: int,
    model_id: str | None,
) -> DatasetStats:
    """The stats of the kept `tasks` (seconds and out are filled in once the dataset is written); `checked`:
    multi-step tasks replayed, per site."""
    by_site: dict[str, dict[str, int]] = {}
    for task in tasks:
        per = by_site.setdefault(task.site, dict.fromkeys(recipe.task_types, 0))
        per[task.task_type] += 1
    dropped = Counter(d.gate for d in drops)
    replay_drops = [d for d in drops if d.gate == "replay"]
    lost = Counter(d.site for d in replay_drops)
    passed = checked.total() - dropped["replay"]
    runs = []
    for s in sources:
        model, adapter = s.explorer_model
        runs.append(RunRef(run_id=s.run_id, site=s.site_name, dir=str(s.store.dir), round=s.round,
                           model_id=model, adapter_id=adapter))  # fmt: skip
    return DatasetStats(
        recipe=recipe.name,
        generator=recipe.generator,
        model=model_id,
        runs=runs,
        counts={t: sum(task.task_type == t for task in tasks) for t in recipe.task_types},
        by_site=by_site,
        drafts={t: drafts.get(t, 0) for t in recipe.task_types},
        skipped=dict(skipped),
        fallbacks=fallbacks,
        gates=GateStats(
            format=Dropped(dropped=dropped["format"]),
            dedup=Dropped(dropped=dropped["dedup"]),
            replay=ReplayStats(
                enabled=recipe.gates.replay,
                checked=checked.total(),
                passed=passed,
                dropped=dropped["replay"],
                pass_rate=round(passed / checked.total(), 4) if checked else None,
                by_site={site: round(1 - lost[site] / n, 4) for site, n in sorted(checked.items()) if n},
                causes=dict(Counter(d.cause or "other" for d in replay_drops).most_common()),
            ),
            scrub={k: scrubbed.get(k, 0) for k in ("secret", "email", "phone")},
        ),
        drops=drops,
    )
