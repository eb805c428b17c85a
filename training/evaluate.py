"""Held-out evaluation of a model (base, or with a LoRA adapter) on stored transitions.

- Predictor accuracy: the Predictor answers each held-out (O_i, a_i, r_sel) exactly as the live Predictor
  (`explorer.roles.predictor.predict`) does: the model first picks the outcome kind (`KINDS`, scored with
  `choose`, one sample at a time), "Nothing visible changes." ends the answer there, otherwise the rest of the
  outcome is generated after `OUTCOME:` and the chosen kind under that kind's grammar (batched per kind,
  greedy), parsed with `parse_prediction`, with one batched repair round for what does not parse (none, where
  the backend enforces grammars) and the same fallback. The fixed rule Judger checks it
  against the true transition, comparing a predicted page with every page the sample's run has seen
  (`RunCases.pages`, built from all of the run's samples, training and held-out).
- Floor: the accuracy of the best know-nothing answer (`explorer.audit.know_nothing`: the site's name, the most
  common title, ...) on the same held-out set. An adapter's gain counts only above it (see `training.gate`).
  With several runs in the held-out set every answer is scored per run (its constants and pages are the run's)
  and the counts are added up; the floor is the answer with the best total.
- Selector surprise rate: at each held-out node with at least two acted-on elements of known outcome, the
  Selector picks among those elements; the rate is the share of picks whose outcome the *base* model
  mispredicts (higher: it finds more of what the model does not understand). `random_surprise` is the same
  share for a uniform pick, the rate to beat.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from pydantic import BaseModel, Field

from explorer.audit import Case, Floor, RunCases, floor, pages_of
from explorer.models import Message
from explorer.pages import SitePages
from explorer.records import Prediction, Verdict
from explorer.roles import (
    acted_name,
    parse_prediction,
    parse_selection,
    predictor_messages,
    rule_verdict,
    selector_messages,
)
from explorer.roles.predictor import FALLBACK_CHANGE, predict_conversations
from explorer.roles.prompts import prefill
from explorer.roles.selector import MAX_CANDIDATES
from explorer.roles.selector import MAX_TOKENS as PICK_TOKENS
from explorer.roles.selector import PREFILL as PICK_PREFILL
from training.samples import Sample
from training.sft import SFTExample

Similarity = Callable[[str, str], float]
Shots = Sequence[SFTExample] | Callable[[Sample], Sequence[SFTExample]]


class EvalReport(BaseModel):
    """Held-out metrics of one model variant (the keys of `metrics` in adapter cards and improve.json)."""

    adapter: str | None  # None: the base model
    predictor_accuracy: float
    predictor_correct: int
    predictor_total: int
    floor: float | None = None  # accuracy of the best know-nothing answer on the same held-out set
    floor_answer: str | None = None  # which answer that is, e.g. "most common title (page)"
    floor_answers: dict[str, float] = {}  # every know-nothing answer's accuracy there
    selector_surprise: float | None = None  # None: no held-out node with two known outcomes
    selector_picks: int = 0
    random_surprise: float | None = None
    seconds: float = 0.0
    wrong: list[str] = Field(default=[], exclude=True)  # "<run>#<record id>" of the transitions it mispredicted

    @property
    def over_floor(self) -> float | None:
        """Held-out accuracy above the floor (None: no floor measured)."""
        return None if self.floor is None else round(self.predictor_accuracy - self.floor, 4)


# -- the runs behind the samples: pages for the Judger, cases for the floor ----------------------------------------


def case_of(sample: Sample) -> Case:
    """A sample as `explorer.audit` sees a transition."""
    return Case(
        record=sample.record_id,
        acted=acted_name(sample.action),
        label=sample.action.label,
        transition=sample.transition,
        prediction="",
    )


def run_cases(samples: Sequence[Sample]) -> dict[str, RunCases]:
    """Per run (`Sample.run`): its cases and every page its samples saw, before and after (`pages_of`). Pass
    all samples of the runs, training and held-out: the Judger then knows every page the run has seen."""
    by_run: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_run[s.run].append(s)
    return {
        run: RunCases(
            run=run,
            site=group[0].site.name,
            start_url=group[0].site.start_url,
            cases=[case_of(s) for s in group],
            pages=pages_of((s.transition for s in group), group[0].site.name),
        )
        for run, group in by_run.items()
    }


def _runs_for(samples: Sequence[Sample], runs: Mapping[str, RunCases] | None) -> dict[str, RunCases]:
    """`runs`, completed by the runs of `samples` it lacks (built from those samples alone)."""
    known = dict(runs or {})
    missing = [s for s in samples if s.run not in known]
    return known | run_cases(missing)


def _cached(similarity: Similarity) -> Similarity:
    """`similarity`, remembered per pair of texts (the floor judges the same constant texts again and again)."""
    memo: dict[tuple[str, str], float] = {}

    def sim(a: str, b: str) -> float:
        if (a, b) not in memo:
            memo[(a, b)] = similarity(a, b)
        return memo[(a, b)]

    return sim


def heldout_floor(
    heldout: Sequence[Sample], similarity: Similarity, runs: Mapping[str, RunCases] | None = None
) -> Floor:
    """The best know-nothing answer on `heldout` (`explorer.audit.floor`). Each answer's constants (most common
    title, ...) come from its run's cases in `runs` (default: the held-out samples alone); with several runs
    each answer's right answers are counted per run and added up, and the best total is the floor."""
    if not heldout:
        raise ValueError("the held-out set is empty: no floor to measure")
    runs = _runs_for(heldout, runs)
    by_run: dict[str, list[Sample]] = defaultdict(list)
    for s in heldout:
        by_run[s.run].append(s)
    right: dict[str, int] = defaultdict(int)
    sim = _cached(similarity)
    for run, group in by_run.items():
        per_run = floor(runs[run], sim, [case_of(s) for s in group])
        for name, acc in per_run.answers.items():
            right[name] += round(acc * len(group))
    answers = {name: round(n / len(heldout), 4) for name, n in right.items()}
    best = max(answers, key=answers.__getitem__)
    return Floor(answer=best, accuracy=answers[best], answers=answers)


# -- the Predictor, decoded as the live one decodes ----------------------------------------------------------------


def judge_prediction(
    prediction: Prediction, sample: Sample, similarity: Similarity, pages: SitePages | None = None
) -> Verdict:
    """The fixed rule Judger's verdict on a Prediction for a stored transition; `pages`: the pages of the sample's
    run (None: only the transition's own two pages are known)."""
    return rule_verdict(prediction, sample.transition, similarity, acted_name(sample.action), pages=pages)


def judge_answer(text: str, sample: Sample, similarity: Similarity, pages: SitePages | None = None) -> Verdict:
    """The fixed rule Judger's verdict on a Predictor answer (`OUTCOME: ...`) for a stored transition; an answer
    that does not parse is the Predictor's fallback."""
    prediction = parse_prediction(text) or Prediction(navigates=False, change=FALLBACK_CHANGE, fallback=True)
    return judge_prediction(prediction, sample, similarity, pages)


def shot_turns(shots: Sequence[SFTExample]) -> list[Message]:
    """Few-shot demonstrations: each example's user prompt and its full answer, as earlier turns."""
    turns: list[Message] = []
    for ex in shots:
        turns += [ex.messages[-1], {"role": "assistant", "content": ex.answer}]
    return turns


def _shots_of(shots: Shots | None) -> Callable[[Sample], Sequence[SFTExample]]:
    if callable(shots):
        return shots
    fixed = list(shots or ())
    return lambda _sample: fixed


@contextmanager
def _default_adapter(model, adapter: str | None) -> Iterator[None]:
    """Make `adapter` the model's default for the duration (`choose` runs the default adapter, not a named one)."""
    if adapter is None or getattr(model, "adapter_id", None) == adapter:
        yield
        return
    previous = model.adapter_id
    model.set_adapter(adapter)
    try:
        yield
    finally:
        model.set_adapter(previous)


def predictor_predictions(
    model, samples: Sequence[Sample], adapter: str | None, shots: Shots | None = ()
) -> list[Prediction]:
    """The Predictor's predictions, decoded as `explorer.roles.predictor.predict` decodes them (one decoder:
    `predict_conversations`). `adapter` None runs the base model; `shots`: demonstrations, the same for every
    sample or chosen per sample."""
    shots_for = _shots_of(shots)
    use = adapter is not None
    conversations, images = [], []
    for s in samples:
        system, user = predictor_messages(s.observation, s.action, s.target, s.selector_reasoning, s.hint)
        conversations.append([system, *shot_turns(shots_for(s)), user])
        images.append([s.observation.som_screenshot] if model.sees_images else None)
    with _default_adapter(model, adapter):  # the kind is scored with the default adapter
        hints = [s.hint for s in samples]
        return predict_conversations(model, conversations, images, hints, use_adapter=use, adapter=adapter)


def predictor_answers(model, samples: Sequence[Sample], adapter: str | None, shots: Shots | None = ()) -> list[str]:
    """The Predictor's raw answers (prefill included; see `predictor_predictions`): `judge_answer` on an answer
    gives the verdict of its prediction (an answer that did not parse even after the repair is the fallback)."""
    return [p.raw for p in predictor_predictions(model, samples, adapter, shots)]


# -- few-shot demonstrations retrieved per sample ------------------------------------------------------------------


def sample_text(sample: Sample) -> str:
    """What retrieval compares: the page's title and the action on it (`Jackets · Shop | click link "Parka"`)."""
    return f"{sample.observation.title} | {sample.action.describe()}"


class ShotRetriever:
    """Per sample, the k training examples whose page and action read most alike (cosine of MiniLM embeddings of
    `sample_text`); ties keep the examples' order. `embed`: texts -> L2-normalized rows (`Embedder().embed`)."""

    def __init__(
        self,
        examples: Sequence[SFTExample],
        samples: Sequence[Sample],
        embed: Callable[[Sequence[str]], np.ndarray],
        k: int = 2,
    ) -> None:
        by_id = {s.id: s for s in samples}
        self.examples = [e for e in examples if e.source in by_id]
        self.k, self.embed = k, embed
        self.rows = embed([sample_text(by_id[e.source]) for e in self.examples]) if self.examples else None

    def __call__(self, sample: Sample) -> list[SFTExample]:
        if self.rows is None or self.k <= 0:
            return []
        scores = self.rows @ self.embed([sample_text(sample)])[0]
        order = sorted(range(len(self.examples)), key=lambda i: -float(scores[i]))
        return [self.examples[i] for i in order[: self.k]]


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
        [*selector_messages(shown.observation, [el for el, _ in opts], []), prefill(PICK_PREFILL)]
        for shown, opts in sets
    ]
    gens = model.generate_batch(
        conversations, max_tokens=PICK_TOKENS, role="selector", use_adapter=adapter is not None, adapter=adapter
    )
    hits, randoms = 0, 0.0
    for (_, opts), gen in zip(sets, gens, strict=True):
        picked = parse_selection(PICK_PREFILL + gen.text, [el for el, _ in opts])
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
    runs: Mapping[str, RunCases] | None = None,
    base_wrong: set[str] | None = None,
    shots: Shots | None = (),
    surprise: bool = True,
    floor_of: Floor | None = None,
) -> EvalReport:
    """Predictor accuracy, the floor and Selector surprise of `model` with `adapter` (None: base) on `heldout`.

    `runs` (`run_cases` of all samples of the runs, training and held-out) gives the Judger every page each run
    has seen and the floor its constants; without it, only what the held-out samples saw is known.
    The surprise rate needs the base model's mispredictions: pass `base_wrong` (the `wrong` of the base
    model's report); without it (the base model itself) the model's own mispredictions are used.
    `shots` prepends few-shot demonstrations to the Predictor's prompt (fixed, or per sample: `ShotRetriever`);
    `surprise=False` skips the Selector; `floor_of` reuses a floor already measured on this held-out set.
    """
    if not heldout:
        raise ValueError("the held-out set is empty: explore more steps or raise the held-out share")
    t0 = time.perf_counter()
    runs = _runs_for(heldout, runs)
    predictions = predictor_predictions(model, heldout, adapter, shots)
    sim = _cached(similarity)
    verdicts = [judge_prediction(p, s, sim, runs[s.run].pages) for p, s in zip(predictions, heldout, strict=True)]
    wrong = [s.id for s, v in zip(heldout, verdicts, strict=True) if not v.correct]
    surprise_rate, picks, random_rate = (
        selector_surprise(model, heldout, set(wrong) if base_wrong is None else base_wrong, adapter)
        if surprise
        else (None, 0, None)
    )
    low = floor_of or heldout_floor(heldout, similarity, runs)
    correct = len(heldout) - len(wrong)
    return EvalReport(
        adapter=adapter,
        predictor_accuracy=round(correct / len(heldout), 4),
        predictor_correct=correct,
        predictor_total=len(heldout),
        floor=low.accuracy,
        floor_answer=low.answer,
        floor_answers=low.answers,
        selector_surprise=None if surprise_rate is None else round(surprise_rate, 4),
        selector_picks=picks,
        random_surprise=None if random_rate is None else round(random_rate, 4),
        seconds=round(time.perf_counter() - t0, 2),
        wrong=wrong,
    )
