"""`scalehop judge audit`: can the Judger be fooled on this site? Measured on a run's own real transitions.

- true accept: the transition's own description, given as the prediction, is accepted (it should be);
- swap false accept: the description of *another* transition of the same run (same navigation flag, an
  outcome that says something false of this one) is accepted;
- constant false accept: a know-nothing answer (`know_nothing`) is accepted where it is wrong. Each answer is
  tried on the transitions of its own kind (page answers on navigations, in-page answers on the rest): a
  navigation flag that differs is rejected for free and would only dilute the rate.
- with labelled cases: agreement with the labels, false-positive and false-negative rates.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from explorer.pages import SitePages, path_segments, title_parts
from explorer.records import Transition
from explorer.roles.judger import RULE_JUDGE, acted_name, names_home, rule_verdict, true_kinds
from explorer.roles.predictor import parse_prediction
from explorer.store import resume

Similarity = Callable[[str, str], float]
SWAPS_PER_TRANSITION = 10


@dataclass(frozen=True)
class Case:
    """One real transition of a run: what was acted on and what happened."""

    record: str
    acted: str  # the acted element's name
    label: str  # the action's target, e.g. `button "Reply"`
    transition: Transition
    prediction: str  # what the run's Predictor said


@dataclass
class RunCases:
    """A run's transitions and the pages it has seen."""

    run: str
    site: str
    start_url: str
    cases: list[Case]
    pages: SitePages


def load_run(run_dir: str | Path) -> RunCases:
    """The judged transitions of a SCALE run (its failure and understood records)."""
    store, _ = resume(run_dir)
    try:
        site = store.meta().site
        cases = []
        for row in store.records():
            rec = row.record
            cases.append(Case(row.id, acted_name(rec.action), rec.action.label, rec.transition, rec.prediction.change))
    finally:
        store.close()
    name, start_url = (site.name, site.start_url) if site is not None else ("", "")
    pages = pages_of((c.transition for c in cases), name)
    return RunCases(Path(run_dir).name, name, start_url, cases, pages)


def save_runs(runs: list[RunCases], path: str | Path) -> None:
    """Keep runs' judged transitions as JSON (what `load_runs` reads back): an audit without the run folders."""
    data = {
        r.run: {
            "site": r.site,
            "start_url": r.start_url,
            "cases": [
                {"record": c.record, "acted": c.acted, "label": c.label, "prediction": c.prediction}
                | {"transition": c.transition.model_dump(mode="json")}
                for c in r.cases
            ],
        }
        for r in runs
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=0))


def load_runs(path: str | Path) -> list[RunCases]:
    """Runs kept by `save_runs`."""
    runs = []
    for name, data in json.loads(Path(path).read_text()).items():
        cases = [
            Case(c["record"], c["acted"], c["label"], Transition.model_validate(c["transition"]), c["prediction"])
            for c in data["cases"]
        ]
        pages = pages_of((c.transition for c in cases), data["site"])
        runs.append(RunCases(name, data["site"], data["start_url"], cases, pages))
    return runs


def pages_of(transitions: Iterable[Transition], site_name: str = "") -> SitePages:
    """Every page the transitions saw, before and after, as a SitePages index."""
    pages = SitePages(site_name=site_name)
    for t in transitions:
        pages.add(t.title_before)
        pages.add(t.title_after, (t.headings_after or [""])[0])
    return pages


def site_title(pages: SitePages) -> str:
    """What the site calls itself: the title part most of its pages carry (else the most common title)."""
    parts = Counter(p for t, _ in pages.pages for p in title_parts(t))
    shared = [p for p, n in parts.most_common() if n >= 2]
    return shared[0] if shared else next(iter(sorted(t for t, _ in pages.pages if t)), pages.site_name)


@dataclass(frozen=True)
class Constant:
    """A know-nothing answer: the text it gives for a case, whether it is a page answer, when it is right."""

    name: str
    navigates: bool
    text: Callable[[Case], str]
    right: Callable[[Case], bool]  # the answer happens to be exactly right here: not a false accept


def know_nothing(run: RunCases) -> list[Constant]:
    """The battery of answers that know nothing about the action: the site's name, the run's most common title,
    its most common outcome (of each kind), "Nothing visible changes.", the root path, the acted element's name.

    An answer is exactly right (so not counted as a false accept) where it holds every distinctive word of one of
    the page's names (own title part, title, heading), or, for an outcome, where it states only what happened."""
    pages, name = run.pages, site_title(run.pages)
    navs = [c.transition for c in run.cases if c.transition.url_changed]
    stays = [c.transition for c in run.cases if not c.transition.url_changed]
    title = Counter(t.title_after for t in navs).most_common(1)[0][0] if navs else name
    nav_common = _most_common(navs)
    page_common = _most_common(stays)
    root = path_segments(run.start_url or "/")
    root_text = "/" + "/".join(root[0]) + ("/" if root[0] else "")

    def names_page(words: str, t: Transition) -> bool:
        said = pages.distinct(words)
        page = pages.identity(t.title_after, (t.headings_after or [""])[0])
        right = any(part <= said for part in page.parts) if said else not page.title
        return right or names_home(words, t)

    def states_only(common: Transition | None, t: Transition) -> bool:
        return common is not None and signature(common) <= signature(t)

    nav_text = nav_common.description if nav_common else f'Navigates to "{name}".'
    page_text = page_common.description if page_common else "Nothing visible changes."
    return [
        Constant("site name", True, lambda c: f'Navigates to "{name}".', lambda c: names_page(name, c.transition)),
        Constant(
            "most common title", True, lambda c: f'Navigates to "{title}".', lambda c: names_page(title, c.transition)
        ),
        Constant("most common page outcome", True, lambda c: nav_text, lambda c: states_only(nav_common, c.transition)),
        Constant(
            "root path",
            True,
            lambda c: f'Navigates to "{name}" ({root_text}).',
            lambda c: path_segments(c.transition.url_after)[0] == root[0],
        ),
        Constant(
            "acted element's name",
            True,
            lambda c: f'Navigates to "{c.acted}".',
            lambda c: names_page(c.acted, c.transition),
        ),
        Constant(
            "nothing changes",
            False,
            lambda c: "Nothing visible changes.",
            lambda c: true_kinds(c.transition) <= {"nothing", "fails"},
        ),
        Constant(
            "most common in-page outcome", False, lambda c: page_text, lambda c: states_only(page_common, c.transition)
        ),
        Constant("acted element's name", False, lambda c: c.label, lambda c: False),
    ]


def _most_common(transitions: list[Transition]) -> Transition | None:
    """A transition with the most common description among them."""
    if not transitions:
        return None
    common = Counter(t.description for t in transitions).most_common(1)[0][0]
    return next(t for t in transitions if t.description == common)


def signature(t: Transition) -> set[tuple]:
    """The facts a transition's description states; another description that states only these is true here."""
    if t.url_changed:
        return {("page", path_segments(t.url_after))}
    facts: set[tuple] = {("appears", e.name) for e in t.added} | {("disappears", e.name) for e in t.removed}
    facts |= {("changes", c.name, c.field, c.after) for c in t.changed}
    facts |= {("shows", x) for x in t.texts_added} | {("hides", x) for x in t.texts_removed}
    facts |= {("dialog", t.dialog)} if t.dialog else set()
    return facts or {("nothing",)}


class ConstantRate(BaseModel):
    """How often one know-nothing answer is accepted where it is wrong."""

    name: str
    navigates: bool
    cases: int  # transitions of its kind where the answer is wrong
    accepted: int

    @property
    def rate(self) -> float:
        """Accepted share (0 when it never applies)."""
        return self.accepted / self.cases if self.cases else 0.0


class LabelStats(BaseModel):
    """A judger against human labels."""

    cases: int
    agreement: float
    false_positive: float  # wrong predictions judged right, of the wrong ones
    false_negative: float  # right predictions judged wrong, of the right ones


class AuditReport(BaseModel):
    """What `scalehop judge audit` measures on one or more runs."""

    judge: str = RULE_JUDGE
    runs: list[str]
    transitions: int
    true_accept: float
    swap_pairs: int
    swap_false_accept: float
    constant_false_accept: float  # the worst know-nothing answer
    constants: dict[str, float]  # "<name> (page|in-page)" -> false-accept rate
    constant_cases: dict[str, int] = Field(default_factory=dict)
    labels: LabelStats | None = None
    failures: list[str] = Field(default_factory=list)  # a few examples of what went wrong, for a person to read

    def summary(self) -> dict:
        """The one-line JSON summary."""
        keys = ["judge", "transitions", "true_accept", "swap_false_accept", "swap_pairs", "constant_false_accept"]
        out = {k: getattr(self, k) for k in keys} | {"constants": self.constants}
        return out | ({"labels": self.labels.model_dump()} if self.labels else {})


def _judge(text: str, case: Case, pages: SitePages, similarity: Similarity) -> bool:
    prediction = parse_prediction(f"OUTCOME: {text}")
    return (
        prediction is not None
        and rule_verdict(prediction, case.transition, similarity, case.acted, pages=pages).correct
    )


def audit(
    runs: list[RunCases], similarity: Similarity, *, swaps: int = SWAPS_PER_TRANSITION, seed: int = 0
) -> AuditReport:
    """True accept, swap and know-nothing false accepts of the rule Judger on the runs' real transitions."""
    rng = random.Random(seed)
    true_ok, total, swap_ok, swap_n, failures = 0, 0, 0, 0, []
    rates: dict[str, ConstantRate] = {}
    for run in runs:
        for case in run.cases:
            total += 1
            if _judge(case.transition.description, case, run.pages, similarity):
                true_ok += 1
            elif len(failures) < 20:
                failures.append(f"true rejected [{run.run}#{case.record}]: {case.transition.description[:160]}")
            mine = signature(case.transition)
            others = [
                o
                for o in run.cases
                if o.transition.url_changed == case.transition.url_changed and not signature(o.transition) <= mine
            ]
            for other in rng.sample(others, min(swaps, len(others))):
                swap_n += 1
                if _judge(other.transition.description, case, run.pages, similarity):
                    swap_ok += 1
                    if len(failures) < 20:
                        failures.append(
                            f"swap accepted [{run.run}#{case.record}]: {other.transition.description[:100]!r} "
                            f"for {case.transition.description[:100]!r}"
                        )
        for const in know_nothing(run):
            key = f"{const.name} ({'page' if const.navigates else 'in-page'})"
            rate = rates.setdefault(key, ConstantRate(name=const.name, navigates=const.navigates, cases=0, accepted=0))
            for case in run.cases:
                if case.transition.url_changed != const.navigates or const.right(case):
                    continue
                rate.cases += 1
                if _judge(const.text(case), case, run.pages, similarity):
                    rate.accepted += 1
                    if len(failures) < 20:
                        failures.append(f"{key} accepted [{run.run}#{case.record}]: {const.text(case)[:80]!r}")
    constants = {k: round(r.rate, 4) for k, r in rates.items()}
    return AuditReport(
        runs=[r.run for r in runs],
        transitions=total,
        true_accept=round(true_ok / total, 4) if total else 0.0,
        swap_pairs=swap_n,
        swap_false_accept=round(swap_ok / swap_n, 4) if swap_n else 0.0,
        constant_false_accept=max(constants.values(), default=0.0),
        constants=constants,
        constant_cases={k: r.cases for k, r in rates.items()},
        failures=failures,
    )


class Floor(BaseModel):
    """The accuracy of the best know-nothing answer on a set of transitions: a gain counts only above it."""

    answer: str  # the best answer's name
    accuracy: float
    answers: dict[str, float]  # every answer's accuracy


def floor(run: RunCases, similarity: Similarity, cases: list[Case] | None = None) -> Floor:
    """Accuracy of each know-nothing answer (given for every transition, whatever its kind) on `cases` (default:
    the run's), judged against the run's pages; the best of them is the floor."""
    cases = run.cases if cases is None else cases
    answers = {}
    for const in know_nothing(run):
        key = f"{const.name} ({'page' if const.navigates else 'in-page'})"
        right = sum(_judge(const.text(c), c, run.pages, similarity) for c in cases)
        answers[key] = round(right / len(cases), 4) if cases else 0.0
    best = max(answers, key=answers.get)
    return Floor(answer=best, accuracy=answers[best], answers=answers)


def agreement(labels: list[bool], judged: list[bool]) -> LabelStats:
    """Agreement with the labels, false-positive rate (wrong judged right), false-negative rate."""
    pairs = list(zip(labels, judged, strict=True))
    wrong = [j for lab, j in pairs if not lab]
    right = [j for lab, j in pairs if lab]
    return LabelStats(
        cases=len(pairs),
        agreement=round(sum(lab == j for lab, j in pairs) / max(1, len(pairs)), 4),
        false_positive=round(sum(wrong) / max(1, len(wrong)), 4),
        false_negative=round(sum(not j for j in right) / max(1, len(right)), 4),
    )


def save_json(report: AuditReport, path: str | Path) -> None:
    """Write the full report as JSON."""
    Path(path).write_text(json.dumps(report.model_dump(), indent=2))
