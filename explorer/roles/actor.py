"""The Actor: one action toward a task, from (intent, observation, earlier steps), with its reasoning.

Grammar (one line, then a reason): `ACTION: click [12]`, `ACTION: type [3] "red shoes" enter`,
`ACTION: select [5] "Price"`, `ACTION: hover [7]`, `ACTION: scroll down` (or `scroll [4] up`), `ACTION: back`,
`ACTION: goto /cart`, `ACTION: stop` or `ACTION: stop "answer"`; then `REASON: <one sentence>`.

The answer is constrained step by step, like the Predictor's outcome kind: the model first picks the verb among
those that fit the page (`ChatModel.choose`); where the backend scores options (`option_scores`: the local
backend) also the mark among the shown elements that fit the verb, a select's option and a scroll's direction; it
writes only the rest (typed text, a stop's answer, the reason) after that prefill. Confidence is the chosen mark's
probability as a constrained decoder writes it (`mark_probabilities`: digit by digit, renormalized over the shown
marks, so the shown marks' probabilities sum to 1); for an action without a mark, the verb's probability over the
verbs offered. It is None where the backend gives no scores (OpenAI-compatible chat servers: the model then writes
the mark itself). A bounded repair, then a recorded fallback: the first shown element's plausible action
(`candidates.action_for`), or `stop` when nothing is shown.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from explorer.candidates import action_for
from explorer.models import ChatModel, Message
from explorer.models.grammar import REASON, REASON_TEXT, literal, one_of
from explorer.observe import text_lines
from explorer.records import Action, Element, Observation
from explorer.roles.asking import ask
from explorer.roles.context import page_summary
from explorer.roles.prompts import messages, prefill
from explorer.roles.shortlist import Embed, shortlist
from explorer.roles.stats import RoleStats

ROLE = "actor"
PREFILL = "ACTION:"
MAX_SHOWN = 15  # elements listed (and scored) per step
MAX_TOKENS = 48  # the free part of an answer: typed text or a stop's answer, then the reason
REASON_TOKENS = 24  # the reason alone, after a complete constrained action
MAX_HISTORY = 5
# why a demonstration (datasets) stops: with an answer, or at the page a task asks for
ANSWER_REASON = "The page shows the answer."
STOP_REASON = "The earlier steps reached what the task asks for: it is done."
SHOWN_TEXTS = 6  # the page's first text blocks, shown to the Actor (datasets keep as many: `page_texts`)
MARKED = ("click", "type", "select", "hover")  # verbs aimed at an element
# what the model picks from, as continuations of `ACTION:` (goto is parsed, but never offered: a small model
# invents URLs; the tasks start on their site)
VERBS = {"click": " click [", "type": " type [", "select": " select [", "hover": " hover [", "scroll": " scroll"}
VERBS |= {"back": " back", "stop": " stop"}
REPAIR = (
    'Answer ACTION: click [N], type [N] "text", select [N] "option", hover [N], scroll down, back or stop "answer", '
    "with N one of {marks}; then REASON: why, one sentence."
)
_ACTION = re.compile(r"ACTION\s*[:=]\s*(click|type|select|hover|scroll|back|goto|stop)\b([^\n]*)", re.IGNORECASE)
_REASON = re.compile(r"REASON\s*[:=]\s*(.+)", re.IGNORECASE)
_MARK = re.compile(r"^\s*\[?\s*(\d+)\s*\]?")
_QUOTED = re.compile(r'^\s*"([^"\n]+)("?)(.*)$')
_TEXT_ROLES = ("textbox", "searchbox")


@dataclass(frozen=True)
class ActorChoice:
    """The Actor's answer: the action, why, how sure, the marks it ranked (likeliest first; empty: not scored),
    whether it is the fallback, and the raw text."""

    action: Action
    reasoning: str
    confidence: float | None
    ranking: tuple[int, ...]
    fallback: bool
    raw: str


def fits(verb: str, el: Element) -> bool:
    """Can `verb` act on `el`? type: text fields; select: elements with options; click, hover, scroll: any."""
    if verb == "type":
        return el.role in _TEXT_ROLES or (el.role == "combobox" and not el.options)
    if verb == "select":
        return bool(el.options)
    return True


def offered_verbs(shown: Sequence[Element], has_history: bool) -> list[str]:
    """The verbs that fit this page: a marked verb needs a shown element it fits, `back` an earlier step."""
    return [v for v in VERBS if (v not in MARKED or any(fits(v, el) for el in shown)) and (v != "back" or has_history)]


def actor_messages(
    intent: str,
    obs: Observation,
    shown: Sequence[Element],
    history: Sequence[str] = (),
    shots: Sequence[tuple[str, str]] = (),
) -> list[Message]:
    """The Actor's prompt: the task, the page (summary and first text blocks), the last steps and the elements;
    `shots` (prompt, answer) pairs go between the system text and the question, as earlier turns."""
    system, user = actor_question(intent, page_summary(obs), obs.texts, history, text_lines(obs.url, shown))
    turns = [m for p, a in shots for m in ({"role": "user", "content": p}, {"role": "assistant", "content": a})]
    return [system, *turns, user]


def actor_question(
    intent: str, page: str, texts: Sequence[str], history: Sequence[str], lines: Sequence[str]
) -> tuple[Message, Message]:
    """(system, user) of the Actor for a page: its summary (`context.page_summary`), text blocks, the earlier
    steps' descriptions and the shown elements' lines (`observe.text_lines`). The live Actor and the training and
    few-shot views built from datasets (`evals.shots`) all write the prompt here, so they read alike."""
    return messages(
        ROLE,
        task=intent,
        page=page,
        texts="".join(f"\nText: {t[:100]}" for t in texts[:SHOWN_TEXTS]),
        history="; ".join(history[-MAX_HISTORY:]) or "none",
        elements="\n".join(line[:160] for line in lines) or "(none)",
    )


def parse_action(text: str, shown: Sequence[Element], base_url: str = "") -> tuple[Action, str] | None:
    """(action, reason) from `ACTION: ...` / `REASON: ...`; None when the action is malformed or its mark is not
    a shown element that fits the verb."""
    found = _ACTION.search(text)
    if found is None:
        return None
    verb, rest = found.group(1).lower(), found.group(2)
    reason = _REASON.search(text[found.end() :])
    reasoning = reason.group(1).strip()[:300] if reason else ""
    action = _build(verb, rest, {el.mark: el for el in shown}, base_url)
    return None if action is None else (action, reasoning)


def _build(verb: str, rest: str, by_mark: dict[int, Element], base_url: str) -> Action | None:
    """The action of one parsed line (`rest`: what follows the verb)."""
    if verb in ("back", "stop"):
        answer = _QUOTED.match(rest)
        return Action(kind=verb, answer=answer.group(1).strip() if answer and verb == "stop" else None)
    if verb == "goto":
        url = rest.strip().strip("\"'<>")
        return Action(kind="goto", url=urljoin(base_url, url)) if url and " " not in url else None
    mark = _MARK.match(rest)
    el = by_mark.get(int(mark.group(1))) if mark else None
    tail = rest[mark.end() :] if mark else rest
    if verb == "scroll":
        direction = "up" if re.match(r"\s*up\b", tail, re.IGNORECASE) else "down"
        return Action.on(el, "scroll", direction=direction) if el else Action(kind="scroll", direction=direction)
    if el is None or not fits(verb, el):
        return None
    if verb in ("click", "hover"):
        return Action.on(el, verb)
    quoted = _QUOTED.match(tail)
    if quoted is None or not quoted.group(1).strip():
        return None
    value = quoted.group(1).strip()
    if verb == "type":
        enter = bool(quoted.group(2)) and bool(re.match(r"\s*enter\b", quoted.group(3), re.IGNORECASE))
        return Action.on(el, "type", text=value, press_enter=enter)
    option = next((o for o in el.options if o.strip().lower() == value.lower()), None)
    return Action.on(el, "select", option=option) if option is not None else None


def _pick(
    model: ChatModel, conversation: list[Message], options: Sequence[str], images, use_adapter: bool
) -> tuple[int | None, list[float] | None]:
    """(the option the model picks, every option's normalized probability where the backend scores options)."""
    scorer = getattr(model, "option_scores", None)
    if scorer is None:
        return model.choose(conversation, options, images, role=ROLE, use_adapter=use_adapter), None
    scores = scorer(conversation, options, images=images, role=ROLE, use_adapter=use_adapter)
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    probs = [w / sum(weights) for w in weights]
    return max(range(len(options)), key=probs.__getitem__), probs


def mark_probabilities(
    model: ChatModel, msgs: list[Message], start: str, marks: Sequence[int], images=None, use_adapter: bool = True
) -> dict[int, float]:
    """Each mark's probability as a constrained decoder writes it after `start`: digit by digit, every step
    renormalized over the characters (a digit, or the closing `]`) that still lead to one of `marks`. A step
    with one way on costs nothing; the others cost one forward pass each (marks 1-15: two). Empty where the
    backend does not score options."""
    if getattr(model, "option_scores", None) is None:
        return {}
    words = [f"{m}]" for m in marks]
    probs: dict[int, float] = {}

    def walk(prefix: str, p: float) -> None:
        nexts = sorted({w[len(prefix)] for w in words if w.startswith(prefix) and len(w) > len(prefix)})
        steps = [1.0] if len(nexts) == 1 else None
        if steps is None:
            steps = _pick(model, [*msgs, prefill(start + prefix)], nexts, images, use_adapter)[1] or []
        for char, q in zip(nexts, steps, strict=True):
            if char == "]":
                probs[int(prefix)] = p * q
            else:
                walk(prefix + char, p * q)

    walk("", 1.0)
    return probs


@dataclass(frozen=True)
class _Start:
    """The constrained start of an answer: its text, the confidence and mark ranking it carries, and whether the
    action is complete (the model then writes only the reason)."""

    text: str = PREFILL
    confidence: float | None = None
    ranking: tuple[int, ...] = ()
    complete: bool = False
    verb: str | None = None  # the verb `text` ends with, when one was picked


def _constrain(model, msgs, shown, verbs, images, use_adapter) -> _Start:
    """Pick the verb; where the backend scores options, also the mark (and a select's option, a scroll's
    direction), so the model writes only what is free: typed text, a stop's answer, the reason."""
    i, probs = _pick(model, [*msgs, prefill(PREFILL)], [VERBS[v] for v in verbs], images, use_adapter)
    if i is None:
        return _Start()
    verb, start = verbs[i], PREFILL + VERBS[verbs[i]]
    if probs is None:
        return _Start(start, verb=verb)
    if verb == "scroll":
        k, _ = _pick(model, [*msgs, prefill(start)], [" down", " up"], images, use_adapter)
        return _Start(start + (" down", " up")[k or 0], probs[i], complete=True, verb=verb)
    if verb not in MARKED:
        return _Start(start, probs[i], complete=verb == "back", verb=verb)
    eligible = {el.mark: el for el in shown if fits(verb, el)}
    marks = mark_probabilities(model, msgs, start, list(eligible), images, use_adapter)
    ranking = tuple(sorted(marks, key=lambda m: -marks[m]))
    el, start = eligible[ranking[0]], f"{start}{ranking[0]}]"
    if verb == "type":
        return _Start(start + ' "', marks[el.mark], ranking, verb=verb)
    if verb == "select":
        k, _ = _pick(model, [*msgs, prefill(start + ' "')], [f'{o}"' for o in el.options], images, use_adapter)
        start += f' "{el.options[k or 0]}"'
    return _Start(start, marks[el.mark], ranking, complete=True, verb=verb)


_TYPED = r'[^"\n]{1,80}"( enter)?'  # a type action's text, after its opening quote
_ANSWER = r'( "[^"\n]{1,120}")?'  # a stop's optional answer


def _verb_grammar(verb: str, shown: Sequence[Element]) -> str:
    """What follows `ACTION:` and the verb's own words (`VERBS`), before the reason."""
    eligible = [el for el in shown if fits(verb, el)]
    marks = one_of([str(el.mark) for el in eligible]) if eligible else "(0)"
    if verb in ("click", "hover"):
        return marks + r"\]"
    if verb == "type":
        return marks + r'\] "' + _TYPED
    if verb == "select":
        return "(" + "|".join(f'{el.mark}\\] "{one_of(el.options)}"' for el in eligible) + ")"
    return {"scroll": "( down| up)", "back": "", "stop": _ANSWER}[verb]


def answer_grammar(start: _Start, verbs: Sequence[str], shown: Sequence[Element]) -> str:
    """The rest of the Actor's answer after `start`, as a regex: the action's free part, then the reason. Where
    the verb (and mark) were scored that is only the typed text, a stop's answer or the reason; where nothing was
    scored (chat servers), the whole action over the offered verbs and the shown marks."""
    if start.complete:
        return REASON_TEXT  # `\nREASON:` is prefilled
    if start.verb == "type" and start.ranking:
        return _TYPED + REASON
    if start.verb is not None:
        return _verb_grammar(start.verb, shown) + REASON
    return "(" + "|".join(literal(VERBS[v]) + _verb_grammar(v, shown) for v in verbs) + ")" + REASON


def act(
    model: ChatModel,
    intent: str,
    obs: Observation,
    candidates: Sequence[Element],
    history: Sequence[str] = (),
    stats: RoleStats | None = None,
    *,
    shots: Sequence[tuple[str, str]] = (),
    use_adapter: bool = True,
    embed: Embed | None = None,
) -> ActorChoice:
    """Ask the model for the next action toward `intent` among the MAX_SHOWN `candidates` closest to it
    (`shortlist`, with `embed`; `history`: the earlier steps as text). One stricter repair, then the recorded
    fallback (see the module doc)."""
    shown = [candidates[i] for i in shortlist(intent, text_lines(obs.url, candidates), MAX_SHOWN, embed)]
    msgs = actor_messages(intent, obs, shown, history, shots)
    images = [obs.som_screenshot] if model.sees_images else None
    verbs = offered_verbs(shown, bool(history))
    start = _constrain(model, msgs, shown, verbs, images, use_adapter)
    parsed, raw = ask(
        model,
        ROLE,
        msgs,
        lambda text: parse_action(text, shown, obs.url),
        start=start.text + ("\nREASON:" if start.complete else ""),
        repair=REPAIR.format(marks=", ".join(str(el.mark) for el in shown) or "none"),
        images=images,
        max_tokens=REASON_TOKENS if start.complete else MAX_TOKENS,
        stats=stats or RoleStats(),
        use_adapter=use_adapter,
        grammar=answer_grammar(start, verbs, shown),
    )
    if parsed is None:
        action = action_for(shown[0], random.Random(0)) if shown else Action(kind="stop")
        return ActorChoice(action, "fallback: the answer did not parse", None, start.ranking, True, raw)
    action, reasoning = parsed
    return ActorChoice(action, reasoning, start.confidence, start.ranking, False, raw)
