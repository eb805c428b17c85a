"""A predicted in-page outcome, read as claims: each clause says what kind of change happens (appears,
disappears, changes, a dialog, a new tab, a failure, or nothing) and names the controls or texts it affects.

Written for the transition grammar (`Appears: button "Post reply".`) and for free text (`A reply form pops up
with a "Post reply" button.`). Quoted names are exact claims; unquoted words are weaker evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from explorer.pages import content_words

Kind = str  # "appears" | "disappears" | "changes" | "dialog" | "new_tab" | "fails" | "nothing"

_QUOTE = re.compile(r'"([^"]*)"|“([^”]*)”|\'([^\'\n]{2,80})\'(?!\w)')
_HOLE = "\x00{}\x00"
_HOLES = re.compile(r"\x00(\d+)\x00")
_CLAUSE_BREAK = re.compile(r"(?<=[.;!?])\s+|\s*;\s*|,\s+|\s+\b(?:and|while|then|but|after which|whereupon)\b\s+")
# the grammar's phrases whose commas are no clause break: "pixels only" (nothing) and "a layer covers the page"
_GRAMMAR_PHRASES = (
    re.compile(r"The page changes, but no control or text does\.?", re.IGNORECASE),
    re.compile(r" controls disappear, the page behind is covered or replaced\.?", re.IGNORECASE),
)
# the grammar's own phrases that contain "or" (they are no hedge) and its markers
_GRAMMAR_OR = re.compile(r"covered or replaced|no control or text", re.IGNORECASE)
_UNSURE = re.compile(r"\b(either|maybe|perhaps|possibly|probably|likely|might|may)\b", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\bor\b|(?<=[a-z])/(?=[a-z])", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/])/\S*")
_KINDS: list[tuple[Kind, re.Pattern[str]]] = [
    (
        "nothing",
        re.compile(
            r"\b(nothing( visible| at all)?( happens| changes)?|no (visible )?(change|effect)s?|stays the same|"
            r"remains? (the same|unchanged)|does not change|doesn't change|unchanged|no control or text)\b"
        ),
    ),
    ("dialog", re.compile(r"\b(a dialog says|alert|confirm(ation)? (box|prompt)|javascript dialog)\b")),
    ("new_tab", re.compile(r"\bnew (browser )?(tab|window)\b")),
    ("fails", re.compile(r"\b(fails?|failed|error)\b")),
    (
        "disappears",
        re.compile(
            r"\b(disappears?|disappeared|vanish\w*|closes?|closed|hides?|hidden|goes away|go away|gone|removed?|"
            r"dismiss\w*|collapses?|collapsed|no longer (shown|visible)|controls disappear)\b"
        ),
    ),
    (
        "appears",
        re.compile(
            r"\b(appears?|appeared|opens?|opened|pops? up|shows?|shown|showing|displays?|displayed|reveals?|"
            r"revealed|expands?|expanded|drops? down|unfolds?|(is|are|gets?) added|becomes? visible|slides? "
            r"(in|down|open|out)|comes? up|loads? (below|in|into)|is inserted|renders?|lists?)\b"
        ),
    ),
    (
        "changes",
        re.compile(
            r"\b(becomes?|became|changes?|changed|toggles?|toggled|updates?|updated|switch(es|ed)?|(un)?checked|"
            r"ticks?|ticked|selected|increments?|increases?|decreases?|goes (up|down)|is cleared|turns?|"
            r"is now|replaced|sorts?|sorted|highlight\w*|fills?|filled|counter|enabled|disabled)\b"
        ),
    ),
]
_BECOMES = re.compile(r"\b(?:becomes?|became|changes? to|turns? into|is now|to)\s+\x00(\d+)\x00")
# words that carry no evidence of *which* control changed: the lexicon's verbs and generic UI nouns
FILLER = content_words(
    "appears disappears opens closes shows hides pops up drops down expands collapses becomes changes updates "
    "button link textbox checkbox combobox menuitem control controls element field box form menu panel section "
    "dialog modal popup overlay text content list item message area region part visible new now more small "
    "little some one two three again click clicked clicking just also"
)


@dataclass
class Claim:
    """One clause of a prediction: its kinds, the names it quotes, the values it says something becomes."""

    text: str
    kinds: set[Kind] = field(default_factory=set)
    quoted: list[str] = field(default_factory=list)
    becomes: list[str] = field(default_factory=list)
    words: set[str] = field(default_factory=set)  # content words outside quotes, less FILLER
    all_words: set[str] = field(default_factory=set)  # content words outside quotes


def parse_claims(text: str) -> list[Claim]:
    """Split a predicted outcome into claims (clauses), each with its kinds and names."""
    quotes: list[str] = []

    def hole(m: re.Match[str]) -> str:
        quotes.append(next(g for g in m.groups() if g is not None))
        return _HOLE.format(len(quotes) - 1)

    masked = _GRAMMAR_PHRASES[1].sub(" controls disappear.", _GRAMMAR_PHRASES[0].sub("Nothing visible changes.", text))
    masked = _QUOTE.sub(hole, masked)
    clauses: list[Claim] = []
    for part in _CLAUSE_BREAK.split(masked):
        if not part or not part.strip(" ."):
            continue
        bare = _HOLES.sub(" ", part).lower()
        kinds = {kind for kind, pattern in _KINDS if pattern.search(bare)}
        if "nothing" in kinds:  # "Nothing visible changes." says only that (and so does "no control or text does")
            kinds = {"nothing"}
        claim = Claim(
            text=_HOLES.sub(lambda m: f'"{quotes[int(m.group(1))]}"', part).strip(),
            kinds=kinds,
            quoted=[quotes[int(i)] for i in _HOLES.findall(part)],
            becomes=[quotes[int(i)] for i in _BECOMES.findall(part)],
            words=content_words(bare) - FILLER,
            all_words=content_words(bare),
        )
        if clauses and not kinds:  # a list continued ("link "A", link "B" and 2 more"): same claim
            prev = clauses[-1]
            prev.quoted += claim.quoted
            prev.words |= claim.words
            prev.all_words |= claim.all_words
            prev.text += ", " + claim.text
        else:
            clauses.append(claim)
    return clauses


_IN_PAGE = re.compile(
    r"^(appears|disappears|changes|shows text|hides text):|\b(nothing|no new page|dialog|modal|pop-?up|pops? up|"
    r"menu|drop-?down|drops? down|tooltip|banner|overlay|box|panel|expands?|collapses?|becomes?|toggles?|"
    r"disappears?|closes?|hides?|goes away|checked|selected|cleared|typed|contains|counter|in place|this page|"
    r"same page|stays?|remains?|count|goes up|goes down|increases?|decreases?|increments?)\b",
    re.IGNORECASE,
)


def in_page(text: str) -> bool:
    """Does a free-text prediction say the change happens on this page (a menu, a dialog, a control that
    becomes something)? Without such a cue, `opens`/`shows` may mean a page as well."""
    return bool(_IN_PAGE.search(_QUOTE.sub(" ", text).strip()))


def hedges(text: str, allowed: str = "", *, alternatives: bool = True) -> bool:
    """Does a prediction hedge (`maybe`, `either`) or, with `alternatives`, name several (`A or B`, `A/B`),
    outside quotes, paths and the grammar's own phrases? `allowed`: text (the real title) whose own words are
    no hedge."""
    bare = _PATH.sub(" ", _QUOTE.sub(" ", _GRAMMAR_OR.sub(" ", text)))
    found = [m.group(0).lower() for m in _UNSURE.finditer(bare)]
    if alternatives:
        found += [m.group(0).lower() for m in _ALTERNATIVE.finditer(bare)]
    return any(w not in allowed.lower().split() for w in found)


def norm(text: str) -> str:
    """Lower case, single spaces, no trailing ellipsis or punctuation: how quoted names are compared."""
    return re.sub(r"\s+", " ", text.lower()).strip().rstrip("…").rstrip(" .,:;!").strip()


def names_match(quoted: str, name: str, *, text_block: bool = False) -> bool:
    """Does a quoted name denote this element name (or, `text_block`, this text block)?"""
    q, n = norm(quoted), norm(name)
    if not q or not n:
        return False
    if q == n:
        return True
    # a text block is matched by a quote of some of it (three words, or half of it): "Reply" is no quote of
    # "Reply to this thread", "Disagree with ideas…" is one of "Disagree with ideas, not people."
    return text_block and (len(q.split()) >= 3 or 2 * len(q) >= len(n)) and q in n
