"""Gating: a new adapter is adopted on task success first, then on the held-out Predictor.

- Task success (`training.paired`): the current model and the candidate run the same dev tasks with the same
  seeds. A significant loss rejects, a significant gain adopts; a split that noise explains decides nothing.
- The held-out Predictor (`gate`): without a significant task-success difference the candidate is adopted only
  if it does not regress on the held-out transitions and beats the floor there.

The floor (`EvalReport.floor`) is the accuracy of the best know-nothing answer on the same held-out set (the
site's name, the most common title, "Nothing visible changes.", ...): an adapter at or below it has learned
nothing that a constant answer does not already get right, whatever it gains over the base model.
"""

from __future__ import annotations

from pydantic import BaseModel

from training.evaluate import EvalReport
from training.paired import ALPHA, PairedSR


class GateDecision(BaseModel):
    """Adopt the candidate or keep the current model (the previous adapter, or the base), and why."""

    adopted: bool
    reason: str
    before: float  # held-out Predictor accuracy of the current model
    after: float  # ... of the candidate
    floor: float | None = None  # ... of the best know-nothing answer (None: not measured)


def gate(current: EvalReport, candidate: EvalReport, min_gain: float = 0.0) -> GateDecision:
    """Adopt `candidate` iff its held-out Predictor accuracy is at least `current`'s plus `min_gain` and above the
    floor of the held-out set (the candidate's report's; a report without a floor is not held to one)."""
    before, after, low = current.predictor_accuracy, candidate.predictor_accuracy, candidate.floor
    name = current.adapter or "the base model"

    def decision(adopted: bool, reason: str) -> GateDecision:
        return GateDecision(adopted=adopted, reason=reason, before=before, after=after, floor=low)

    if after < before + min_gain:
        return decision(False, f"regression: held-out accuracy {after:.3f} < {before:.3f} of {name}; keeping {name}")
    if low is not None and after <= low:
        return decision(
            False,
            f"at or below the floor: held-out accuracy {after:.3f} <= {low:.3f} of the know-nothing answer "
            f"{candidate.floor_answer!r}; keeping {name}",
        )
    above = f", above the floor {low:.3f}" if low is not None else ""
    return decision(True, f"held-out accuracy {after:.3f} >= {before:.3f} of {name}{above}")


def decide(predictor: GateDecision | None, paired: PairedSR | None, alpha: float = ALPHA) -> GateDecision | None:
    """The round's decision: task success when it differs beyond noise (paired sign test at `alpha`), else the
    held-out Predictor's `predictor` (None when neither was measured)."""
    if paired is None:
        return predictor
    before = after = 0.0
    floor = None
    if predictor is not None:
        before, after, floor = predictor.before, predictor.after, predictor.floor
    seen = f"; held-out Predictor: {predictor.reason}" if predictor is not None else ""
    verdict = paired.verdict(alpha)
    if verdict == "worse":
        return GateDecision(
            adopted=False, reason=f"task SR regression: {paired.describe()}{seen}", before=before, after=after,
            floor=floor,
        )  # fmt: skip
    if verdict == "better":
        return GateDecision(
            adopted=True, reason=f"task SR gain: {paired.describe()}{seen}", before=before, after=after, floor=floor
        )
    if predictor is None:
        return GateDecision(adopted=False, reason=f"no significant task SR gain: {paired.describe()}", before=0.0,
                            after=0.0)  # fmt: skip
    return predictor.model_copy(update={"reason": f"task SR within noise ({paired.describe()}); {predictor.reason}"})
