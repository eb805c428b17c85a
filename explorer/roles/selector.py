"""The Selector: pick the untried action the model understands least, with its reasoning.

Candidates are the usable, untried elements of the node, rarest first (how often an element of the
same role and name was tried anywhere in the run); the model sees the top few and names one by mark.
"""

from __future__ import annotations

import random
import re

from explorer.candidates import action_for
from explorer.models import ChatModel
from explorer.models.grammar import REASON, one_of
from explorer.records import Element, Observation, Selection
from explorer.roles.asking import ask
from explorer.roles.context import element_line, page_summary
from explorer.roles.prompts import messages
from explorer.roles.stats import RoleStats

MAX_CANDIDATES = 8
MAX_TOKENS = 40
PREFILL = "MARK:"  # the answer is started for the model, which then names a number


_MARK = re.compile(r"MARK\s*[:=]?\s*\[?(\d+)", re.IGNORECASE)
_REASON = re.compile(r"REASON\s*[:=]\s*(.+)", re.IGNORECASE)


def selector_messages(obs: Observation, candidates: list[Element], tried: list[str]):
    """The Selector's prompt: page summary, what was tried here, and the candidates."""
    return messages(
        "selector",
        page=page_summary(obs),
        tried=", ".join(tried[-6:]) or "nothing yet",
        candidates="\n".join(element_line(el) for el in candidates),
    )


def selector_grammar(shown: list[Element]) -> str:
    """The Selector's answer after `MARK:`: one of the shown marks, then a reason."""
    return " " + one_of([str(el.mark) for el in shown]) + REASON


def parse_selection(text: str, candidates: list[Element]) -> tuple[Element, str] | None:
    """The candidate named by `MARK: n` (or the first candidate mark in the text) and the reason."""
    by_mark = {el.mark: el for el in candidates}
    found = _MARK.search(text)
    marks = [int(found.group(1))] if found else [int(m) for m in re.findall(r"\d+", text)]
    element = next((by_mark[m] for m in marks if m in by_mark), None)
    if element is None:
        return None
    reason = _REASON.search(text)
    return element, (reason.group(1).strip()[:300] if reason else "")


def select(
    model: ChatModel,
    obs: Observation,
    candidates: list[Element],
    tried: list[str],
    rng: random.Random,
    stats: RoleStats | None = None,
) -> Selection:
    """Ask the model for a pick among the (ranked) candidates; one stricter repair, then the rarest one."""
    shown = candidates[:MAX_CANDIDATES]
    marks = ", ".join(str(el.mark) for el in shown)
    picked, raw = ask(
        model,
        "selector",
        selector_messages(obs, shown, tried),
        lambda text: parse_selection(text, shown),
        start=PREFILL,
        repair=f"Answer MARK: one of {marks}",
        images=[obs.som_screenshot] if model.sees_images else None,
        max_tokens=MAX_TOKENS,
        stats=stats or RoleStats(),
        grammar=selector_grammar(shown),
    )
    if picked is None:
        element, reason, fallback = shown[0], "fallback: the rarest untried element", True
    else:
        (element, reason), fallback = picked, False
    reason = reason or f"unsure what {element_line(element)} does"
    return Selection(action=action_for(element, rng, obs), reasoning=reason, fallback=fallback, raw=raw)
