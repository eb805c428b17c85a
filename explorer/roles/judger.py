"""The Judger: does a Prediction say what *this* action did? It stays fixed (never trained).

`rule` (default; `rule-v2`): a deterministic comparison. A prediction is right only when every concrete
claim it makes is true of this transition and what it says tells this outcome apart from the site's others.
- No usable prediction (a fallback), or one that only restates the action, is wrong.
- The navigation flag must match.
- A new page: a predicted path must equal the real one on whole segments (ids included). Otherwise the
  predicted name must pick this page out of every page the run has seen, compared on what tells pages apart
  (`SitePages`: the site's shared title words, name and headings are stripped). Naming only the site, a word
  every page carries, or several pages (`A, B or C`) is wrong. Embedding similarity breaks ties only where no
  word matches.
- In-page: every claim's kind must be one the transition really has (appears / disappears / changes /
  dialog / new tab / nothing; direction counts), every quoted name must be one that changed in that way, and
  at least one claim must name what changed (or, with no names at all, be close to the description).
`llm`: the configured (strong) model judges, with any adapter disabled; output that does not parse
falls back to the rule verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from explorer.claims import FILLER, Claim, hedges, in_page, names_match, norm, parse_claims
from explorer.models import ChatModel
from explorer.models.grammar import REASON
from explorer.pages import SitePages, content_words, path_segments, url_path
from explorer.records import Action, Prediction, Transition, Verdict
from explorer.roles.asking import ask
from explorer.roles.prompts import messages
from explorer.roles.stats import RoleStats

RULE_JUDGE = "rule-v2"
# Tuned on the calibration split of tests/data/judge_labels.jsonl (bench/judger.py prints the sweep).
TITLE_RECALL = 0.6  # share of the real page's distinctive words a predicted page name must carry
TITLE_THRESHOLD = 0.75  # embedding similarity of a predicted page name and the real one, where no word matches
CHANGE_THRESHOLD = 0.6  # embedding similarity of an unnamed in-page claim and the transition description
_WORD = re.compile(r"[a-z0-9]+")
_MARK = re.compile(r"\[\d+\]")
# words that add nothing to a prediction: role names, the grammar's own words, filler
_ROLE_WORDS = {"button", "link", "tab", "textbox", "checkbox", "combobox", "menuitem", "appears", "disappears"}
_ROLE_WORDS |= {"changes", "the", "a", "click", "clicks"}
LAYER_WORDS = content_words("dialog modal popup pop-up form menu dropdown drop-down overlay layer panel box")
LAYER_KINDS = {"appears": "added", "disappears": "removed"}
LAYER_SIZE = 3  # controls that appear or go together: a layer, not one control
REPLACED = 3  # at most this many controls replaced by as many others count as a change in place
_PATH_SAID = re.compile(r"(?:\b(?:at|to)\s+|->\s*)(/[\w\-./?=&%+~]*[\w/])")  # a path in free text: `opens at /x`
STATE_WORDS = content_words("checked unchecked selected deselected ticked unticked cleared enabled disabled pressed")
_CORRECT = re.compile(r"CORRECT\s*[:=]\s*(yes|no)", re.IGNORECASE)
_HOME = re.compile(r"\b(home|front|start|main|landing|index)\s*-?\s*page\b|\bhomepage\b|\bhome\b", re.IGNORECASE)

Similarity = Callable[[str, str], float]


def rule_verdict(
    prediction: Prediction,
    transition: Transition,
    similarity: Similarity,
    acted: str = "",
    *,
    pages: SitePages | None = None,
    title_recall: float = TITLE_RECALL,
    title_threshold: float = TITLE_THRESHOLD,
    change_threshold: float = CHANGE_THRESHOLD,
) -> Verdict:
    """The deterministic judgement (see the module doc). `acted`: the name of the element acted on; `pages`: the
    pages the run has seen (None: only this transition's two pages are known)."""

    def verdict(correct: bool, score: float, reason: str) -> Verdict:
        return Verdict(correct=correct, score=round(max(0.0, score), 3), reason=reason, judge=RULE_JUDGE)

    if prediction.fallback:
        return verdict(False, 0.0, "no usable prediction: the model's answer did not parse")
    if _restates(prediction.change, acted):
        return verdict(False, 0.0, "the prediction only restates the action")
    says_page = True if prediction.navigates else False if in_page(prediction.change) else None
    if says_page is not None and says_page != transition.url_changed:  # None: `opens`/`shows` may be either
        said = "a new page" if says_page else "no new page"
        return verdict(
            False, 0.0, f"predicted {said}, but the URL {'did' if transition.url_changed else 'did not'} change"
        )
    if transition.url_changed:
        known = pages if pages is not None else SitePages()
        if pages is None:
            known.add(transition.title_before)
        known.add(transition.title_after, (transition.headings_after or [""])[0])
        correct, score, reason = _judge_page(prediction, transition, known, similarity, title_recall, title_threshold)
    else:
        correct, score, reason = _judge_in_page(prediction, transition, similarity, acted, change_threshold)
    return verdict(correct, score, reason)


def _judge_page(
    p: Prediction, t: Transition, pages: SitePages, similarity: Similarity, recall: float, threshold: float
) -> tuple[bool, float, str]:
    """A navigation: the predicted path, or else the predicted page name, must pick out the real page."""
    heading = (t.headings_after or [""])[0]
    if hedges(p.change, allowed=f"{t.title_after} {heading}"):
        return False, 0.0, "names several pages, or hedges"
    expected = p.expected_url or next(iter(_PATH_SAID.findall(p.change)), None)
    if expected and expected.strip():
        if path_segments(expected) != path_segments(t.url_after):
            return False, 0.0, f"predicted path {url_path(expected)!r}, but it is {url_path(t.url_after)!r}"
        if not (p.expected_title or "").strip():
            return True, 1.0, "predicted the page's path"
        named, score, why = _judge_name(p.expected_title, t, pages, similarity, recall, threshold, path_known=True)
        if not named:  # every claim must hold: a right path does not excuse a wrong name
            return False, score, f"predicted the page's path, but its name is wrong: {why}"
        return True, 1.0, "predicted the page's path and name"
    return _judge_name(p.expected_title or p.change, t, pages, similarity, recall, threshold)


def _judge_name(
    guess: str,
    t: Transition,
    pages: SitePages,
    similarity: Similarity,
    recall: float,
    threshold: float,
    path_known: bool = False,
) -> tuple[bool, float, str]:
    """A predicted page name must pick out the real page among the pages the run has seen. With the right path
    already predicted (`path_known`), the name need only be true of the page: a title the page shares with its
    siblings (`Browse ads` for every filtered listing) passes, one that fits another page better does not."""

    def beaten(rival, own) -> bool:  # fits (tuples: best part, then all words) or similarities (floats)
        if not path_known:
            return rival >= own
        return (rival[0] if isinstance(rival, tuple) else rival) > (own[0] if isinstance(own, tuple) else own)

    heading = (t.headings_after or [""])[0]
    truth = pages.identity(t.title_after, heading)
    said = pages.distinct(guess)
    if names_home(guess, t):
        return True, 1.0, "predicted the home page"
    if not said:
        if not truth.title and content_words(guess) & (pages.shared()[0] | pages.shared()[1]):
            return True, 1.0, "predicted the page titled by the site's name alone"
        return False, 0.0, "names only what every page of the site shares"
    others = [i for i in pages.known() if not _same_page(i, truth)]
    score = _recall(said, truth)
    if score > 0:
        if score < recall:
            return False, score, f"names {score:.0%} of what tells {truth.label!r} apart"
        weight = pages.rarity()
        fit = _fit(said, truth, weight)
        rival = max(others, key=lambda i: _fit(said, i, weight), default=None)
        if rival is not None and beaten(_fit(said, rival, weight), fit):
            return False, score, f"fits {rival.label!r} as well as the real {truth.label!r}"
        return True, score, f"names the page: {truth.label!r}"
    # no word in common: embedding similarity against every known page, the real one must lead
    text = " ".join(sorted(said))
    sim = similarity(text, _text(truth)) if not truth.empty else 0.0
    if sim < threshold:
        return False, sim, f"title similarity {sim:.2f} against {truth.label!r}"
    rivals = [similarity(text, _text(i)) for i in others if not i.empty]
    if rivals and beaten(max(rivals), sim):
        return False, sim, f"title similarity {sim:.2f}, but another page fits as well"
    return True, sim, f"title similarity {sim:.2f} against {truth.label!r}"


def names_home(text: str, t: Transition) -> bool:
    """Does `text` speak of the home page (`home`, `front page`), and is the new page the site's root?"""
    return bool(_HOME.search(text)) and path_segments(t.url_after)[0] == ()


def _same_page(a, b) -> bool:
    """Two identities of one page: the same distinctive title words, and no two different main headings."""
    return a.title == b.title and (not a.heading or not b.heading or a.heading == b.heading)


def _recall(said: frozenset[str], page) -> float:
    """Share of the page's distinctive title (or heading) words that a predicted name carries."""
    return max((len(said & part) / len(part) for part in page.parts), default=0.0)


def _fit(said: frozenset[str], page, weight: Callable[[str], float]) -> tuple[float, float]:
    """Overlap of a predicted name and a page's own name, title or heading (the best of them), each word weighted
    by how rare it is among the site's pages: `change history of the Welcome flat page` fits the history page
    (`history` is rare) better than the flat page's form (`flat` is on many pages). Ties go to the page whose
    words, all together, fit best (`Welcome` is the page titled Welcome, not a form whose title mentions it)."""

    def overlap(part: frozenset[str]) -> float:
        return sum(weight(w) for w in said & part) / sum(weight(w) for w in said | part)

    return max(map(overlap, page.parts), default=0.0), overlap(page.title | page.heading)


def _text(page) -> str:
    return " ".join(sorted(page.title | page.heading))


def true_kinds(t: Transition) -> set[str]:
    """The kinds of change a transition really has ('nothing' when only pixels, or nothing at all, changed)."""
    kinds = set()
    if t.added or t.texts_added or t.dialog:
        kinds.add("appears")
    if t.removed or t.texts_removed:
        kinds.add("disappears")
    if t.changed or t.title_after != t.title_before or _replaced(t):
        kinds.add("changes")
    if not (kinds - {"appears"} or t.added or t.texts_added):  # the page itself stays (a dialog is no change of it)
        kinds.add("nothing")
    if t.dialog:
        kinds.add("dialog")
    if t.new_tab:
        kinds.add("new_tab")
    if t.error:
        kinds.add("fails")
    return kinds


def _replaced(t: Transition) -> bool:
    """A control or two replaced by others in place (`Follow` -> `Following`), not a layer opening or closing."""
    return 0 < len(t.added) <= REPLACED and 0 < len(t.removed) <= REPLACED


def _affected(t: Transition) -> dict[str, list[tuple[str, bool]]]:
    """Per kind, the (name, is a text block) of what changed that way."""
    changed = [n for c in t.changed for n in (c.name, c.before, c.after) if n]
    if t.title_after != t.title_before:
        changed += [t.title_before, t.title_after]
    if _replaced(t):  # one control replaced by another ("Show phone" -> "Hide phone")
        changed += [e.name for e in [*t.removed, *t.added] if e.name]
    return {
        "appears": [(e.name, False) for e in t.added if e.name]
        + [(x, True) for x in t.texts_added]
        + ([(t.dialog, True)] if t.dialog else []),
        "disappears": [(e.name, False) for e in t.removed if e.name] + [(x, True) for x in t.texts_removed],
        "changes": [(n, False) for n in changed],
        "dialog": [(t.dialog, True)] if t.dialog else [],
        "new_tab": [(t.new_tab, True)] if t.new_tab else [],
        "values": [(c.after, False) for c in t.changed if c.field == "value" and c.after],  # what a field now holds
    }


def _judge_in_page(
    p: Prediction, t: Transition, similarity: Similarity, acted: str, threshold: float
) -> tuple[bool, float, str]:
    """No navigation: the kinds, the direction and the named controls must all be this transition's."""
    kinds = true_kinds(t)
    claims = [c for c in parse_claims(p.change) if c.kinds or c.quoted or c.words]
    said = set().union(*(c.kinds for c in claims)) if claims else set()
    if not p.change.strip() or said == {"nothing"} or (said and said <= {"nothing", "fails"}):
        right = kinds <= {"nothing", "fails"} and ("fails" not in said or "fails" in kinds)
        return right, float(right), "both say nothing changes" if right else "disagree on whether anything changes"
    if kinds <= {"nothing", "fails"}:
        return False, 0.0, "predicts a change, but nothing changed"
    if hedges(p.change, alternatives=False):
        return False, 0.0, "hedges"
    affected = _affected(t)
    evidence = []
    for claim in claims:
        wrong = _contradiction(claim, kinds, affected, t, acted)
        if wrong:
            return False, 0.0, wrong
        evidence += _named(claim, affected, acted)
    if not evidence:  # "the report dialog closes": a layer of controls opened or went, and the claim says so
        evidence = [
            "a layer of controls " + "/".join(sorted(c.kinds & LAYER_KINDS.keys())) for c in claims if _layer(c, t)
        ]
    if evidence:
        return True, 1.0, f"names what changed: {evidence[0]!r}"
    if any(c.quoted for c in claims):  # it named something, and none of it is what changed
        return False, 0.0, "names nothing that changed"
    score = similarity(p.change, t.description)
    return score >= threshold, score, f"change similarity {score:.2f}"


def _claim_sets(claim: Claim, affected: dict[str, list[tuple[str, bool]]]) -> list[tuple[str, bool]]:
    """What a claim may be talking about: the affected items of its kinds (of all kinds when it names none)."""
    kinds = (claim.kinds - {"nothing", "fails"}) or set(affected) - {"values"}
    return [item for k in kinds for item in affected.get(k, [])]


def _contradiction(
    claim: Claim, kinds: set[str], affected: dict[str, list[tuple[str, bool]]], t: Transition, acted: str
) -> str | None:
    """Why a claim is false of the transition, or None."""
    claimed = claim.kinds - {"fails"}
    if claimed and not claimed & kinds:
        return f"says it {'/'.join(sorted(claimed))}, but the transition {'/'.join(sorted(kinds))}"
    pool = _claim_sets(claim, affected)
    everything = [item for items in affected.values() for item in items]
    for q in claim.quoted:
        if acted and names_match(q, acted) or not q.strip():
            continue
        if any(names_match(q, n, text_block=b) for n, b in pool):
            continue
        if any(names_match(q, n, text_block=b) for n, b in everything):
            return f"{q!r} changed, but not the way the prediction says"
        verbs = "/".join(sorted(k.removesuffix("s") for k in claimed)) or "change"
        return f"names {q!r}, which did not {verbs}"
    for value in claim.becomes:
        if not any(names_match(value, n) for n in _after_values(t)):
            return f"says something becomes {value!r}, but nothing does"
    return None


def _after_values(t: Transition) -> list[str]:
    """What controls (and the title) became: the right-hand side of every change."""
    replaced = [e.name for e in t.added] if _replaced(t) else []
    return [c.after for c in t.changed] + [c.name for c in t.changed] + [t.title_after] + replaced


def _named(claim: Claim, affected: dict[str, list[tuple[str, bool]]], acted: str) -> list[str]:
    """The affected items a claim names: by a quoted name, by every word of a control's name, or by most of
    the claim's words for a text block. The acted element itself names nothing."""
    found, single = [], []
    for name, block in _claim_sets(claim, affected):
        if acted and norm(name) == norm(acted) and not (claim.becomes or claim.all_words & STATE_WORDS):
            continue  # the acted control names its own change only with what it becomes
        words = content_words(name)
        if any(names_match(q, name, text_block=block) for q in claim.quoted):
            found.append(name)
        elif block and len(claim.all_words & words) >= max(2, len(words) / 2):
            found.append(name)
        elif block and len(words) == 1 and words <= claim.words and not next(iter(words)).isdigit():
            single.append(name)  # one-word texts ("EU", "UK", "US") count when the claim names two of them
        elif not block and len(words - FILLER) >= 2 and words <= claim.all_words:
            found.append(name)
    found += single if len(set(single)) >= 2 else []
    if not claim.kinds or "changes" in claim.kinds:  # "Size 41 is selected": the value a field now holds
        found += [v for v, _ in affected["values"] if content_words(v) and content_words(v) <= claim.all_words]
    return found


def _layer(claim: Claim, t: Transition) -> bool:
    """Does a claim say that a layer (a dialog, form or menu) opens or closes, and did three or more controls
    appear (or go) that way?"""
    for kind, field in LAYER_KINDS.items():
        if kind in claim.kinds and claim.all_words & LAYER_WORDS and len(getattr(t, field)) >= LAYER_SIZE:
            return True
    return False


def _restates(change: str, acted: str) -> bool:
    """Does a predicted change say nothing beyond marks, role words and the acted element's own name?"""
    said = set(_WORD.findall(_MARK.sub(" ", change).lower())) - _ROLE_WORDS - set(_WORD.findall(acted.lower()))
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
    pages: SitePages | None = None,
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
        grammar=" (yes|no)" + REASON,
    )
    if correct is None:
        return rule_verdict(prediction, transition, similarity, acted_name(action), pages=pages)
    reason = raw.split("REASON:", 1)[-1].strip()[:200] if "REASON:" in raw else raw.strip()[:200]
    return Verdict(correct=correct, score=float(correct), reason=reason, judge=f"llm:{model.model_id}")
