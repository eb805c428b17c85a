"""Stored transitions of exploration runs, rebuilt for prompts: the full observation O_i, the action a_i and its
target element, the Selector's context at that moment, and what really happened (t_i, r_t_i).

Two sources: `load_samples` reads the ExploreRecords of SCALE runs ("failure" = j=0, the failure samples SFT
trains on; "understood" = j=1); `crawl_samples` rebuilds the transitions of any run's steps (baselines included)
from the stored node observations, unlabelled (kind "crawl") until a model's predictions are judged on them.
`page_key` (path and query, no origin: ports differ between runs) splits held-out pages from training pages.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from explorer.config import SiteConfig
from explorer.dedup import normalize_url
from explorer.records import Action, Element, Observation, Transition
from explorer.rows import RECORD_KINDS, RecordKind, StepRow
from explorer.store import resume
from explorer.transition import diff, outcome_reasoning

KINDS = RECORD_KINDS
SampleKind = RecordKind | Literal["crawl"]  # "crawl": a transition not judged yet
CRAWL_REASONING = "verification: a random action"  # what the engine tells the Predictor for actions it did not pick


@dataclass(frozen=True)
class Sample:
    """One stored transition with everything needed to rebuild the prompts the roles saw."""

    run: str  # the run folder
    record_id: str  # record id, or "step-<n>" for crawled steps
    kind: SampleKind  # "failure" (j=0), "understood" (j=1), or "crawl" (not judged yet)
    node: str  # node_from
    observation: Observation  # the full O_i
    action: Action  # a_i
    selector_reasoning: str  # r_sel_i
    transition: Transition  # t_i
    outcome_reasoning: str  # r_t_i
    site: SiteConfig
    tried_keys: tuple[str, ...] = ()  # element keys tried at the node before this step
    selected: bool = False  # the Selector picked the action (False: verification or crawl)
    hint: str | None = None  # what the transition memory told the Predictor ("Seen before: ..."), if anything

    @property
    def id(self) -> str:
        """`<run folder>#<record id>`."""
        return f"{self.run}#{self.record_id}"

    @property
    def target(self) -> Element | None:
        """The element acted on (by key, else by mark)."""
        by_key = next((e for e in self.observation.elements if e.key == self.action.element_key), None)
        return by_key or (self.observation.element(self.action.mark) if self.action.mark is not None else None)

    @property
    def page_key(self) -> str:
        """The page of O_i without its origin: the unit of the held-out split."""
        url = normalize_url(self.observation.url, self.site.ignore_params, self.site.keep_fragment)
        parts = urlsplit(url)
        return f"{self.site.name}:{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")

    def labelled(self, wrong: bool) -> Sample:
        """This transition as a failure sample (wrong=True) or an understood one."""
        return replace(self, kind="failure" if wrong else "understood")


def load_samples(run_dirs: Iterable[str | Path], kinds: tuple[RecordKind, ...] = KINDS) -> list[Sample]:
    """The ExploreRecords of `kinds` of each run (in step order) with full observations."""
    out: list[Sample] = []
    for run_dir in run_dirs:
        store, _ = resume(run_dir)
        try:
            site = store.site()
            tried = _tried_before(store.steps())
            for row in store.records():
                if row.kind not in kinds:
                    continue
                rec = row.record
                if rec.observation is None:
                    continue  # written before full observations were stored: no prompt can be rebuilt
                tried_keys, selected = tried.get(rec.step, ((), True))
                out.append(
                    Sample(
                        run=str(run_dir),
                        record_id=row.id,
                        kind=row.kind,
                        node=rec.node_from,
                        observation=store.observation(rec.observation),
                        action=rec.action,
                        selector_reasoning=rec.selector_reasoning,
                        transition=rec.transition,
                        outcome_reasoning=rec.outcome_reasoning,
                        site=site,
                        tried_keys=tried_keys,
                        selected=selected,
                        hint=rec.prediction.hint,
                    )
                )
        finally:
            store.close()
    return out


def crawl_samples(run_dir: str | Path) -> list[Sample]:
    """The transitions of a run's element actions, rebuilt from the stored observations of the two nodes
    (first-visit observations: exact on deterministic pages). Kind "crawl": judge a model on them to label."""
    store, graph = resume(run_dir)
    try:
        site = store.site()
        observations: dict[str, Observation] = {}

        def observation(node_id: str) -> Observation | None:
            digest = graph.node(node_id).observation
            if digest and node_id not in observations:
                observations[node_id] = store.observation(digest)
            return observations.get(node_id)

        out, seen = [], set()
        for row in store.steps():
            node_from, node_to, action = row.node_from, row.node_to, row.action
            if not (node_from and node_to and action.element_key) or (node_from, action.element_key) in seen:
                continue
            before, after = observation(node_from), observation(node_to)
            if before is None or after is None or not any(e.key == action.element_key for e in before.elements):
                continue
            seen.add((node_from, action.element_key))
            transition = diff(before, after, row.action_outcome())
            out.append(
                Sample(
                    run=str(run_dir),
                    record_id=f"step-{row.step}",
                    kind="crawl",
                    node=node_from,
                    observation=before,
                    action=action,
                    selector_reasoning=CRAWL_REASONING,
                    transition=transition,
                    outcome_reasoning=outcome_reasoning(action.describe(), transition),
                    site=site,
                )
            )
        return out
    finally:
        store.close()


def _tried_before(steps: list[StepRow]) -> dict[int, tuple[tuple[str, ...], bool]]:
    """step -> (element keys tried at its node before it, whether the step was a Selector pick)."""
    seen: dict[str, list[str]] = defaultdict(list)
    out = {}
    for row in steps:
        key = row.action.element_key
        out[row.step] = (tuple(seen[row.node_from]), row.kind == "select")
        if row.node_from and key and key not in seen[row.node_from]:
            seen[row.node_from].append(key)
    return out


def split_by_page(samples: list[Sample], heldout_share: float, seed: int = 0) -> tuple[list[Sample], list[Sample]]:
    """(train, held-out): whole pages go to one side, chosen by a seeded hash of `page_key`. With two or more
    pages and a share above 0, each side gets at least one page (short runs see only a few pages)."""
    if not 0 <= heldout_share < 1:
        raise ValueError(f"heldout_share must be in [0, 1), got {heldout_share}")

    def rank(page: str) -> float:
        return int.from_bytes(hashlib.sha256(f"{seed}:{page}".encode()).digest()[:4], "big") / 2**32

    pages = sorted({s.page_key for s in samples}, key=rank)
    held = {p for p in pages if rank(p) < heldout_share}
    if heldout_share > 0 and len(pages) >= 2:
        held = held or {pages[0]}
        held = held - {pages[-1]} if held == set(pages) else held
    return [s for s in samples if s.page_key not in held], [s for s in samples if s.page_key in held]
