"""Gating: a new adapter is adopted only if it does not regress on the held-out set and beats the floor there.

The floor (`EvalReport.floor`) is the accuracy of the best know-nothing answer on the same held-out set (the
site's name, the most common title, "Nothing visible changes.", ...): an adapter at or below it has learned
nothing that a constant answer does not already get right, whatever it gains over the base model.
"""

from __future__ import annotations

from pydantic import BaseModel

from training.evaluate import EvalReport


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
