"""Labelled Judger cases: real transitions, predictions of them (the model's own, paraphrases, near misses,
hedges, adversarial answers), and a person's label. The file is self-contained JSON: each source run's pages
(what the Judger compares a predicted page against) and each case's full transition.

The labelling rules are the file's `rules` text; `split` is `calibration` (thresholds may be tuned on it)
or `report` (nothing is tuned on it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from explorer.audit import LabelStats, agreement
from explorer.pages import SitePages
from explorer.records import Prediction, Transition, Verdict
from explorer.roles.judger import rule_verdict
from explorer.roles.predictor import parse_prediction

Split = Literal["calibration", "report"]


class Source(BaseModel):
    """A run the cases come from: its site and every (title, heading) it saw."""

    site: str
    pages: list[tuple[str, str]]


class LabelledCase(BaseModel):
    """One labelled prediction of one real transition."""

    id: str
    source: str  # key into LabelledSet.sources
    split: Split
    category: str  # model-base | model-adapter | paraphrase | near-miss | hedge | adversarial | truth
    acted: str
    transition: Transition
    prediction: str
    correct: bool
    note: str = ""


class LabelledSet(BaseModel):
    """The labelled file: rules, sources and cases."""

    rules: str
    sources: dict[str, Source]
    cases: list[LabelledCase] = Field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> LabelledSet:
        """Read a labelled file."""
        return cls.model_validate_json(Path(path).read_text())

    def save(self, path: str | Path) -> None:
        """Write it, one case per line for readable diffs."""
        head = self.model_dump(mode="json", exclude={"cases"})
        lines = [json.dumps(c.model_dump(mode="json"), ensure_ascii=False) for c in self.cases]
        body = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
        Path(path).write_text(body + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n")

    def pages(self, source: str) -> SitePages:
        """The SitePages of one source."""
        src = self.sources[source]
        return SitePages.of(src.pages, src.site)


Judge = Callable[[Prediction, Transition, str, SitePages], Verdict]


def judge_cases(
    labelled: LabelledSet, similarity: Callable[[str, str], float], split: Split | None = None, **thresholds: float
) -> tuple[list[LabelledCase], list[bool]]:
    """The rule Judger's verdict on each case (of one split, or all), with `thresholds` passed on."""
    cases = [c for c in labelled.cases if split is None or c.split == split]
    pages = {name: labelled.pages(name) for name in labelled.sources}
    judged = []
    for case in cases:
        prediction = parse_prediction(f"OUTCOME: {case.prediction}")
        if prediction is None:
            judged.append(False)
            continue
        verdict = rule_verdict(
            prediction, case.transition, similarity, case.acted, pages=pages[case.source], **thresholds
        )
        judged.append(verdict.correct)
    return cases, judged


def score(labelled: LabelledSet, similarity: Callable[[str, str], float], split: Split | None = None) -> LabelStats:
    """Agreement, false-positive and false-negative rates of the rule Judger on a split."""
    cases, judged = judge_cases(labelled, similarity, split)
    return agreement([c.correct for c in cases], judged)
