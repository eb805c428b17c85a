"""What a run store holds, as typed rows: steps, records, events, model usage and the run's meta.

Step and record kinds have names that say what they mean. Runs written before the names changed still load:
`step_kind` and `record_kind` map the old names, and the store applies them whenever it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from explorer.config import ExploreConfig, SiteConfig
from explorer.records import Action, ActionOutcome, EventKind, ExploreRecord

StepKind = Literal["start", "select", "verify", "return", "goto", "probe"]
"""start: a worker's first page; select: an action the strategy picked (the Selector, or a baseline's walk);
verify: one of SCALE-Hop's verification actions; return: return-to-node (or the crawl's reload of a page after a
click); goto: a baseline's jump by URL (the random walk's back to the start, the crawl's next frontier page);
probe: a search submitted with a word of the site's pages (`explorer.probe`, before the strategy's steps)."""
RecordKind = Literal["failure", "understood"]
"""failure: a wrong prediction (j=0), a failure sample; understood: a right one (j=1)."""
RECORD_KINDS: tuple[RecordKind, ...] = ("failure", "understood")

_OLD_RECORD_KINDS: dict[str, RecordKind] = {"explore": "failure"}
_OLD_STEP_KINDS: dict[str, StepKind] = {"explore": "select"}  # "goto" when its action was a goto


def record_kind(stored: str) -> RecordKind:
    """The kind of a stored record, under its current name."""
    return _OLD_RECORD_KINDS.get(stored, stored)


def stored_names(kind: RecordKind) -> tuple[str, ...]:
    """Every name a record of `kind` may be stored under (its current name first)."""
    return (kind, *(old for old, new in _OLD_RECORD_KINDS.items() if new == kind))


def step_kind(stored: str | None, action: Action) -> StepKind | None:
    """The kind of a stored step, under its current name (None: a step written without a kind)."""
    if stored in _OLD_STEP_KINDS:
        return "goto" if action.kind == "goto" else _OLD_STEP_KINDS[stored]
    return stored


@dataclass(frozen=True)
class StepRow:
    """One committed step: the browser action, its outcome and the nodes it went between."""

    step: int
    node_from: str | None
    node_to: str | None
    action: Action
    outcome: dict  # ActionOutcome's fields without its action (see `action_outcome`)
    kind: StepKind | None
    created: float

    def action_outcome(self) -> ActionOutcome:
        """The outcome as the browser reported it."""
        return ActionOutcome.model_validate({**self.outcome, "action": self.action})


@dataclass(frozen=True)
class RecordRow:
    """One record of a step (an ExploreRecord's JSON as `payload`) with the nodes it went between."""

    id: str  # "<step>-<n>"
    step: int
    kind: RecordKind
    node_from: str | None
    node_to: str | None
    payload: dict

    @cached_property
    def record(self) -> ExploreRecord:
        """The payload as an ExploreRecord (parsed on first use)."""
        return ExploreRecord.model_validate(self.payload)


@dataclass(frozen=True)
class EventRow:
    """A browser or engine event of a step (blocked request, crash, timeout, ...)."""

    id: int
    step: int | None
    kind: EventKind
    detail: str
    url: str
    created: float | None


@dataclass(frozen=True)
class RoleUsage:
    """A role's model usage over a run."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class RunMeta(BaseModel):
    """The run-level settings and totals (`RunStore.create` and `RunStore.set_meta` write them)."""

    model_config = ConfigDict(extra="allow")  # keys another scalehop version wrote stay readable

    run_id: str
    created: float = 0.0
    site: SiteConfig | None = None  # None: a store not written by `scalehop explore`
    explore: ExploreConfig | None = None
    strategy: str | None = None  # explore.strategy; runs written before the ExploreConfig was kept store only this
    tokens: int = 0  # model tokens, all resumed parts of the run together
    seconds: float = 0.0  # wall time, all parts together
    timings: dict[str, float] = {}  # seconds per part: act, observe, dedup, graph, store, model
    roles: dict[str, dict[str, float]] = {}  # RoleStats.report(), all parts together (merged_report)
    probes_done: bool = False  # the site had no search field or no untried word left: a resume probes no more

    @model_validator(mode="after")
    def _strategy_of_explore(self) -> RunMeta:
        if self.explore is not None:
            self.strategy = self.explore.strategy
        return self
