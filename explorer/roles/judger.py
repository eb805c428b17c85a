"""The Judger: does a Prediction match the Transition that really happened? It stays fixed (never trained).

`rule` (default, the right choice for a weak model): a deterministic comparison. A fallback (the model's
answer did not parse) or a prediction that only restates the action is wrong. The navigation flag
must match; for a new page the predicted title (or path) must match the real one; otherwise the
prediction must name a control that really appeared, disappeared or changed, or be semantically close
to the transition description (MiniLM embeddings), or both say that nothing changes.
`llm`: the configured (strong) model judges, with any adapter disabled; output that does not parse
falls back to the rule verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from explorer.models import ChatModel
from explorer.records import Action, Prediction, Transition, Verdict
from explorer.roles.asking import ask
from explorer.roles.prompts import messages
from explorer.roles.stats import RoleStats

RULE_JUDGE = "rule-v1"
TITLE_THRESHOLD = 0.75  # embedding similarity of predicted and real page titles
CHANGE_THRESHOLD = 0.6  # embedding similarity of predicted change and transition description
# "nothing changes" in the model's words and in the transition grammar's ("no control or text does": only pixels)
_NOTHING = re.compile(
    r"\b(nothing|no (visible )?change|stays the same|does not change|unchanged|no control or text)\b", re.IGNORECASE
)
_WORD = re.compile(r"[a-z0-9]+")
_MARK = re.compile(r"\[\d+\]")
# words that add nothing to a prediction: role names, the grammar's own words, filler
_ROLE_WORDS = {"button", "link", "tab", "textbox", "checkbox", "combobox", "menuitem", "appears", "disappears"}
_ROLE_WORDS |= {"changes", "the", "a", "click", "clicks"}
_CORRECT = re.compile(r"CORRECT\s*[:=]\s*(yes|no)", re.IGNORECASE)

Similarity = Callable[[str, str], float]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _overlap(a: str, b: str) -> float:
    """Share of the shorter text's words found in the other."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else 0.0


def rule_verdict(
    prediction: Prediction,
    transition: Transition,
    similarity: Similarity,
    acted: str = "",
    *,
    title_threshold: float = TITLE_THRESHOLD,
    change_threshold: float = CHANGE_THRESHOLD,
) -> Verdict:
    """The deterministic judgement (see the module doc); `acted` is the name of the element acted on."""

    def verdict(correct: bool, score: float, reason: str) -> Verdict:
        return Verdict(correct=correct, score=round(score, 3), reason=reason, judge=RULE_JUDGE)

    if prediction.fallback:
        return verdict(False, 0.0, "no usable prediction: the model's answer did not parse")
    if _restates(prediction.change, acted):
        return verdict(False, 0.0, "the prediction only restates the action")
    if prediction.navigates != transition.url_changed:
        said = "a new page" if prediction.navigates else "no new page"
        return verdict(
            False, 0.0, f"predicted {said}, but the URL {'did' if transition.url_changed else 'did not'} change"
        )
    if transition.url_changed:
        path = transition.url_after.split("://", 1)[-1].split("/", 1)[-1]
        if (
            prediction.expected_url
            and prediction.expected_url.strip("/")
            and prediction.expected_url.strip("/") in path
        ):
            return verdict(True, 1.0, "predicted the page's path")
        guess = prediction.expected_title or prediction.change
        truths = [transition.title_after, *transition.headings_after[:1]]
        score = max([_overlap(guess, t) for t in truths] + [similarity(guess, t) for t in truths if t])
        return verdict(score >= title_threshold, score, f"title match {score:.2f} against {transition.title_after!r}")
    t = transition
    nothing_changed = not (t.added or t.removed or t.changed or t.texts_added or t.texts_removed or t.dialog)
    if nothing_changed or _NOTHING.search(prediction.change):
        both = nothing_changed and bool(_NOTHING.search(prediction.change) or not prediction.change.strip())
        return verdict(
            both, float(both), "both say nothing changes" if both else "disagree on whether anything changes"
        )
    # controls that really appeared or changed (removed ones too when nothing appeared), minus the acted-on
    # element itself: repeating the action's own label says nothing about its effect
    shown = [*transition.added, *transition.changed] or transition.removed
    named = {e.name.lower() for e in shown if e.name} - {acted.lower()}
    mentioned = [n for n in named if len(n) > 2 and n in prediction.change.lower()]
    if mentioned:
        return verdict(True, 1.0, f"names what changed: {mentioned[0]!r}")
    score = similarity(prediction.change, transition.description)
    return verdict(score >= change_threshold, score, f"change similarity {score:.2f}")


def _restates(change: str, acted: str) -> bool:
    """Does a predicted change say nothing beyond marks, role words and the acted element's own name?"""
    said = _words(_MARK.sub(" ", change)) - _ROLE_WORDS - _words(acted)
    return bool(acted) and not said


def acted_name(action: Action) -> str:
    """The name of the element an action targets (`button "Reply"` -> `Reply`), for `rule_verdict`."""
    return action.label.split('"')[1] if action.label.count('"') >= 2 else ""


def parse_judgement(text: str) -> bool | None:
    """yes/no from `CORRECT: yes|no`, or None."""
    found = _CORRECT.search(text)
    return None if found is None else found.group(1).lower() == "yes"


def llm_verdict(
    model: ChatModel,
    action: Action,
    prediction: Prediction,
    transition: Transition,
    similarity: Similarity,
    stats: RoleStats | None = None,
) -> Verdict:
    """The model judges (adapter disabled: the Judger stays fixed); unparsable output falls back to the rule."""
    msgs = messages("judger", action=action.describe(), prediction=prediction.change, truth=transition.description)
    correct, raw = ask(
        model,
        "judger",
        msgs,
        parse_judgement,
        start="CORRECT:",
        repair="Answer CORRECT: yes or no",
        images=None,
        max_tokens=40,
        stats=stats or RoleStats(),
        use_adapter=False,
    )
    if correct is None:
        return rule_verdict(prediction, transition, similarity, acted_name(action))
    reason = raw.split("REASON:", 1)[-1].strip()[:200] if "REASON:" in raw else raw.strip()[:200]
    return Verdict(correct=correct, score=float(correct), reason=reason, judge=f"llm:{model.model_id}")
