"""The Predictor: what will this action do? Answered in the grammar of transition descriptions, so that a
trained model's output is directly comparable with what really happened."""

from __future__ import annotations

import re
from collections.abc import Sequence

from explorer.models import ChatModel, Message
from explorer.models.grammar import REASON, literal
from explorer.records import Action, Element, Observation, Prediction
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
    """Ask the model what `action` will do (see `predict_many`)."""
    return predict_many(model, obs, [(action, target, selector_reasoning, hint)], stats, use_adapter=use_adapter)[0]


def predict_many(
    model: ChatModel,
    obs: Observation,
    asks: Sequence[tuple[Action, Element | None, str, str | None]],
    stats: RoleStats | None = None,
    *,
    use_adapter: bool = True,
) -> list[Prediction]:
    """What each (action, target, selector reasoning, hint) of `asks` will do on `obs`, decoded together (the N
    verification predictions of a node: one batch instead of N calls); see `predict_conversations`."""
    conversations = [predictor_messages(obs, a, t, r, h) for a, t, r, h in asks]
    images = [[obs.som_screenshot] if model.sees_images else None] * len(asks)
    hints = [h for *_, h in asks]
    return predict_conversations(model, conversations, images, hints, stats, use_adapter=use_adapter)


def predict_conversations(
    model: ChatModel,
    conversations: Sequence[list[Message]],
    images: Sequence[list[bytes] | None],
    hints: Sequence[str | None],
    stats: RoleStats | None = None,
    *,
    use_adapter: bool = True,
    adapter: str | None = None,
) -> list[Prediction]:
    """The Predictor's decoding of many prompts: the model picks each outcome kind (scored, one prompt at a time),
    "Nothing visible changes." ends an answer there, the rest is generated in one batch per kind under that
    kind's grammar; what does not parse gets one batched stricter repair, then the recorded fallback. The live
    Predictor and the held-out evaluation (training/evaluate.py) both decode here. `adapter` names the adapter
    of the generation (the kind is scored with the model's default one)."""
    stats = stats or RoleStats()
    n = len(conversations)
    stats.count("predictor", calls=n, constrained=n * bool(getattr(model, "enforces_grammar", False)))
    starts = []
    for msgs, im in zip(conversations, images, strict=True):
        kind = model.choose([*msgs, prefill(PREFILL)], KINDS, im, role="predictor", use_adapter=use_adapter)
        starts.append(PREFILL + (KINDS[kind] if kind is not None else ""))
    todo = [i for i in range(n) if not starts[i].endswith(FALLBACK_CHANGE)]

    def generate(asked: list[int], convs: list[list[Message]]) -> list[str]:
        texts: dict[int, str] = {}
        by_grammar: dict[str, list[int]] = {}
        for j, i in enumerate(asked):
            by_grammar.setdefault(rest_grammar(starts[i]), []).append(j)
        for grammar, js in by_grammar.items():  # one batch per kind: a batch holds one grammar
            gens = model.generate_batch(
                [[*convs[j], prefill(starts[asked[j]])] for j in js],
                images=[images[asked[j]] for j in js],
                max_tokens=MAX_TOKENS,
                role="predictor",
                use_adapter=use_adapter,
                adapter=adapter,
                grammar=grammar,
            )
            texts |= {j: starts[asked[j]] + g.text for j, g in zip(js, gens, strict=True)}
        return [texts[j] for j in range(len(asked))]

    raws = dict(enumerate(starts)) | dict(
        zip(todo, generate(todo, [list(conversations[i]) for i in todo]), strict=True)
    )
    parsed = {i: parse_prediction(raws[i]) for i in todo}
    again = [i for i in todo if parsed[i] is None]
    stats.count("predictor", repairs=len(again))
    repairs = [
        [*conversations[i], {"role": "assistant", "content": raws[i]}, {"role": "user", "content": REPAIR}]
        for i in again
    ]
    for i, raw in zip(again, generate(again, repairs) if again else [], strict=True):
        raws[i], parsed[i] = raw, parse_prediction(raw)
    out = []
    for i in range(n):
        if i not in parsed:
            out.append(Prediction(navigates=False, change=FALLBACK_CHANGE, raw=raws[i], hint=hints[i]))
        elif parsed[i] is None:
            stats.count("predictor", fallbacks=1)
            fallback = {"reasoning": "fallback", "fallback": True, "raw": raws[i], "hint": hints[i]}
            out.append(Prediction(navigates=False, change=FALLBACK_CHANGE, **fallback))
        else:
            out.append(parsed[i].model_copy(update={"hint": hints[i]}))
    return out
