"""Held-out evaluation of a model (base, or with a LoRA adapter) on stored transitions.

- Predictor accuracy: the Predictor answers each held-out (O_i, a_i, r_sel) in one prefilled pass (batched,
  greedy, no repair round; an unparsable answer counts as the Predictor's fallback, as in `predict`), and the
  fixed rule Judger checks it against the true transition.
- Selector surprise rate: at each held-out node with at least two acted-on elements of known outcome, the
  Selector picks among those elements; the rate is the share of picks whose outcome the *base* model
  mispredicts (higher: it finds more of what the model does not understand). `random_surprise` is the same
  share for a uniform pick, the rate to beat.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from explorer.models import Message
from explorer.records import Prediction, Verdict
from explorer.roles import (
    acted_name,
    parse_prediction,
    parse_selection,
    predictor_messages,
    rule_verdict,
    selector_messages,
)
from explorer.roles.predictor import FALLBACK_CHANGE
from explorer.roles.predictor import MAX_TOKENS as PREDICTOR_TOKENS
from explorer.roles.predictor import PREFILL as PREDICTOR_PREFILL
from explorer.roles.prompts import prefill
from explorer.roles.selector import MAX_CANDIDATES
from explorer.roles.selector import MAX_TOKENS as SELECTOR_TOKENS
from explorer.roles.selector import PREFILL as SELECTOR_PREFILL
from training.samples import Sample
from training.sft import SFTExample

Similarity = Callable[[str, str], float]


class EvalReport(BaseModel):
    """Held-out metrics of one model variant (the keys of `metrics` in adapter cards and improve.json)."""

    adapter: str | None  # None: the base model
    predictor_accuracy: float
    predictor_correct: int
    predictor_total: int
    selector_surprise: float | None = None  # None: no held-out node with two known outcomes
    selector_picks: int = 0
    random_surprise: float | None = None
    seconds: float = 0.0
    wrong: list[str] = []  # "<run>#<record id>" of the transitions it mispredicted


def judge_answer(text: str, sample: Sample, similarity: Similarity) -> Verdict:
    """The fixed rule Judger's verdict on a Predictor answer (`OUTCOME: ...`) for a stored transition."""
    prediction = parse_prediction(text) or Prediction(navigates=False, change=FALLBACK_CHANGE, fallback=True)
    return rule_verdict(prediction, sample.transition, similarity, acted_name(sample.action))


def shot_turns(shots: Sequence[SFTExample]) -> list[Message]:
    """Few-shot demonstrations: each example's user prompt and its full answer, as earlier turns."""
    turns: list[Message] = []
    for ex in shots:
        turns += [ex.messages[-1], {"role": "assistant", "content": ex.answer}]
    return turns


def predictor_answers(
    model, samples: Sequence[Sample], adapter: str | None, shots: Sequence[SFTExample] = ()
) -> list[str]:
    """The Predictor's answers (prefill included), batched; `adapter` None runs the base model."""
    demos = shot_turns(shots)
    conversations = []
    for s in samples:
        system, user = predictor_messages(s.observation, s.action, s.target, s.selector_reasoning, s.hint)
        conversations.append([system, *demos, user, prefill(PREDICTOR_PREFILL)])
    gens = model.generate_batch(
        conversations, max_tokens=PREDICTOR_TOKENS, role="predictor", use_adapter=adapter is not None, adapter=adapter
    )
    return [PREDICTOR_PREFILL + g.text for g in gens]


def _surprise_sets(samples: Sequence[Sample]) -> list[tuple[Sample, list[tuple[object, Sample]]]]:
    """Per held-out node: (the sample whose observation is shown, [(its element, the sample of its outcome)])."""
    by_node: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        by_node[(s.run, s.node)].append(s)
    sets = []
    for group in by_node.values():
        shown, options, seen = group[0], [], set()
        for s in group:
            key = s.action.element_key
            el = next((e for e in shown.observation.elements if e.key == key), None)
            if el is not None and key not in seen:
                seen.add(key)
                options.append((el, s))
        if len(options) >= 2:
            sets.append((shown, options[:MAX_CANDIDATES]))
    return sets


def selector_surprise(
    model, samples: Sequence[Sample], base_wrong: set[str], adapter: str | None
) -> tuple[float | None, int, float | None]:
    """(surprise rate of the Selector's picks, picks, surprise rate of a uniform pick) on held-out nodes."""
    sets = _surprise_sets(samples)
    if not sets:
        return None, 0, None
    conversations = [
        [*selector_messages(shown.observation, [el for el, _ in opts], []), prefill(SELECTOR_PREFILL)]
        for shown, opts in sets
    ]
    gens = model.generate_batch(
        conversations, max_tokens=SELECTOR_TOKENS, role="selector", use_adapter=adapter is not None, adapter=adapter
    )
    hits, randoms = 0, 0.0
    for (_, opts), gen in zip(sets, gens, strict=True):
        picked = parse_selection(SELECTOR_PREFILL + gen.text, [el for el, _ in opts])
        chosen = next((s for el, s in opts if picked and el.key == picked[0].key), opts[0][1])  # unparsable: first
        hits += chosen.id in base_wrong
        randoms += sum(s.id in base_wrong for _, s in opts) / len(opts)
    return hits / len(sets), len(sets), randoms / len(sets)


def evaluate(
    model,
    heldout: Sequence[Sample],
    similarity: Similarity,
    adapter: str | None = None,
    *,
    base_wrong: set[str] | None = None,
    shots: Sequence[SFTExample] = (),
    surprise: bool = True,
) -> EvalReport:
    """Predictor accuracy and Selector surprise of `model` with `adapter` (None: base) on `heldout`.

    The surprise rate needs the base model's mispredictions: pass `base_wrong` (the `wrong` of the base
    model's report); without it (the base model itself) the model's own mispredictions are used.
    `shots` prepends few-shot demonstrations to the Predictor's prompt; `surprise=False` skips the Selector.
    """
    if not heldout:
        raise ValueError("the held-out set is empty: explore more steps or raise the held-out share")
    t0 = time.perf_counter()
    answers = predictor_answers(model, heldout, adapter, shots)
    verdicts = [judge_answer(a, s, similarity) for a, s in zip(answers, heldout, strict=True)]
    wrong = [s.id for s, v in zip(heldout, verdicts, strict=True) if not v.correct]
    surprise_rate, picks, random_rate = (
        selector_surprise(model, heldout, set(wrong) if base_wrong is None else base_wrong, adapter)
        if surprise
        else (None, 0, None)
    )
    correct = len(heldout) - len(wrong)
    return EvalReport(
        adapter=adapter,
        predictor_accuracy=round(correct / len(heldout), 4),
        predictor_correct=correct,
        predictor_total=len(heldout),
        selector_surprise=None if surprise_rate is None else round(surprise_rate, 4),
        selector_picks=picks,
        random_surprise=None if random_rate is None else round(random_rate, 4),
        seconds=round(time.perf_counter() - t0, 2),
        wrong=wrong,
    )
