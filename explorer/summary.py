"""A run's numbers as typed artifacts: `RunSummary` (what `run_exploration` returns and `scalehop explore --json`
prints) and `RunMetrics`, the run folder's metrics.json (the summary and the per-step curves)."""

from __future__ import annotations

from pydantic import BaseModel

from explorer.artifact import Artifact


class RunSummary(BaseModel):
    """The numbers of one exploration run (see explorer.metrics.summarize)."""

    run_id: str
    run_dir: str
    strategy: str | None
    steps: int  # committed steps (browser actions), resumed parts included
    states: int  # graph nodes
    urls: int  # distinct normalized URLs
    states_merged: int  # states with aliases merged (one URL path, same screenshot)
    same_url_states: int  # states that share their URL with an earlier one
    elements_tried: int  # distinct elements acted on
    element_coverage: float  # share of the elements seen that were acted on
    failures: int  # failure samples (j=0)
    records: int  # records of every kind
    statuses: dict[str, int]  # nodes per status (unexplored, partial, full)
    unreachable: int  # nodes return-to-node gave up on
    blocked_requests: int
    errors: dict[str, int]  # fault events per kind (timeout, crash, ...)
    tokens: int  # model tokens in and out
    seconds: float  # wall time
    stopped_by: str | None = None  # the budget that ended the run (None: not recorded)


class RunMetrics(Artifact):
    """metrics.json of a run folder: the summary and, per step, cumulative states, URLs, elements tried and
    failures (index = step number)."""

    FILE = "metrics.json"
    SCHEMA = 1

    summary: RunSummary
    curves: dict[str, list[int]]
