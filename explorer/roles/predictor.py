"""The Predictor: what will this action do? Answered in the grammar of transition descriptions, so that a
trained model's output is directly comparable with what really happened."""

from __future__ import annotations

import re

from explorer.models import ChatModel
from explorer.models.grammar import REASON, literal
from explorer.records import Action, Element, Observation, Prediction
from explorer.roles.asking import ask
from explorer.roles.context import neighbourhood, page_summary
from explorer.roles.prompts import messages, prefill
from explorer.roles.stats import RoleStats

MAX_TOKENS = 60
_OUTCOME = re.compile(r"OUTCOME\s*[:=][ \t]*(.*?)[ \t]*(?:\n|REASON\s*[:=]|$)", re.IGNORECASE)
_REASON = re.compile(r"REASON\s*[:=]\s*(.+)", re.IGNORECASE)
_NAVIGATES = re.compile(r'Navigates to\s+"([^"\n]*?)(?:"|$)(?:\s*\(([^)]*)\))?', re.IGNORECASE)
_NAV_WORDS = re.compile(
    r"\b(navigat\w*|redirect\w*|reloads?|refresh(es)?|goes( back)? to|go( back)? to|returns? to|"
    r"takes (you|the user) to|loads? (a|the) (new )?page|opens? (the|a)\s[^.!?\n]{0,60}?page|page (opens|loads))\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r'"([^"]{2,80})"')
_STAYS = re.compile(
    r"\b(no new page|not (navigate|leave|load|go)\w*|without (navigat|leav|load)\w*|stays? on|(same|current|this) "
    r"page (stays|remains)|does not (navigate|leave|load|go)|doesn't (navigate|leave|load|go))",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\([^)]*\)")  # "The action fails (navigation did not answer ...)" is no navigation
FALLBACK_CHANGE = "Nothing visible changes."
REPAIR = "Answer with one line starting OUTCOME: and then one line starting REASON:"  # the stricter ask
PREFILL = "OUTCOME:"  # the answer is started for the model: small models then keep the format
# The outcome kinds of the transition grammar. The model first picks one, scored over each kind's own tokens
# (`choose`: greedy decoding under a grammar compares token prefixes such as " N" instead, and measurably picks
# worse with a small model), then writes the rest of the outcome under that kind's grammar.
KINDS = (' Navigates to "', " Appears:", " Disappears:", " Changes:", " " + FALLBACK_CHANGE)
_RESTS = (r'[^"\n]{1,80}"', r" [^\n]{2,150}", r" [^\n]{2,150}", r" [^\n]{2,150}", "")
# The whole outcome grammar after `OUTCOME:` (kind, then the page title or what appears, disappears or changes,
# then a reason): what a backend that scores no options is asked for.
OUTCOME_GRAMMAR = "(" + "|".join(literal(k) + r for k, r in zip(KINDS, _RESTS, strict=True)) + ")" + REASON


def rest_grammar(start: str) -> str:
    """The grammar of what follows `start` (the prefill, and the chosen kind when there is one)."""
    kind = next((i for i, k in enumerate(KINDS) if start.endswith(k)), None)
    return OUTCOME_GRAMMAR if kind is None else _RESTS[kind] + REASON


def predictor_messages(
    obs: Observation, action: Action, target: Element | None, selector_reasoning: str, hint: str | None = None
):
    """The Predictor's prompt: page summary, the target's neighbourhood, the action and why it was chosen, and
    what an element of the same kind did earlier in the run (`hint`, from the transition memory), if anything."""
    return messages(
        "predictor",
        page=page_summary(obs),
        neighbourhood=neighbourhood(obs, target) if target else "(no element)",
        action=action.describe(),
        selector_reasoning=selector_reasoning[:200] or "-",
        hint=f"\nSeen before: {hint}" if hint else "",
    )


def parse_prediction(text: str) -> Prediction | None:
    """A Prediction from `OUTCOME: ...` / `REASON: ...` (or from free text); None when nothing usable."""
    text = text.strip()
    labelled = _OUTCOME.search(text)
    outcome = (labelled.group(1) if labelled else text.split("\n")[0]).strip()[:400]
    reason_m = _REASON.search(text)
    reason = reason_m.group(1).strip()[:300] if reason_m else ""
    if not re.search(r"[A-Za-z]{3}", outcome) or (not labelled and _REASON.match(outcome)):
        return None
    nav = _NAVIGATES.search(outcome)
    if nav:
        return Prediction(
            navigates=True,
            expected_title=nav.group(1),
            expected_url=nav.group(2),
            change=outcome,
            reasoning=reason,
            raw=text,
        )
    bare = _ASIDE.sub(" ", _QUOTED.sub(" ", outcome))
    navigates = bool(_NAV_WORDS.search(bare)) and not _STAYS.search(bare)
    quoted = _QUOTED.findall(outcome)
    title = quoted[0] if navigates and quoted else None
    return Prediction(navigates=navigates, expected_title=title, change=outcome, reasoning=reason, raw=text)


def predict(
    model: ChatModel,
    obs: Observation,
    action: Action,
    target: Element | None,
    selector_reasoning: str,
    stats: RoleStats | None = None,
    *,
    hint: str | None = None,
    use_adapter: bool = True,
) -> Prediction:
    """Ask the model what `action` will do: it picks the outcome kind (scored), then writes the rest of the
    outcome under that kind's grammar. One stricter repair, then a recorded fallback."""
    stats = stats or RoleStats()
    msgs = predictor_messages(obs, action, target, selector_reasoning, hint)
    images = [obs.som_screenshot] if model.sees_images else None
    kind = model.choose([*msgs, prefill(PREFILL)], KINDS, images, role="predictor", use_adapter=use_adapter)
    start = PREFILL + (KINDS[kind] if kind is not None else "")
    if start.endswith(FALLBACK_CHANGE):
        stats.calls["predictor"] += 1
        stats.constrained["predictor"] += bool(getattr(model, "enforces_grammar", False))
        return Prediction(navigates=False, change=FALLBACK_CHANGE, raw=start, hint=hint)
    prediction, raw = ask(
        model,
        "predictor",
        msgs,
        parse_prediction,
        start=start,
        repair=REPAIR,
        images=images,
        max_tokens=MAX_TOKENS,
        stats=stats,
        use_adapter=use_adapter,
        grammar=rest_grammar(start),
    )
    if prediction is None:
        return Prediction(
            navigates=False, change=FALLBACK_CHANGE, reasoning="fallback", fallback=True, raw=raw, hint=hint
        )
    return prediction.model_copy(update={"hint": hint})
