"""Gating: a new adapter is adopted only if it does not regress on the held-out set."""

from __future__ import annotations

from pydantic import BaseModel

from training.evaluate import EvalReport


class GateDecision(BaseModel):
    """Adopt the candidate or keep the current model (the previous adapter, or the base), and why."""

    adopted: bool
    reason: str
    before: float  # held-out Predictor accuracy of the current model
    after: float  # ... of the candidate


def gate(current: EvalReport, candidate: EvalReport, min_gain: float = 0.0) -> GateDecision:
    """Adopt `candidate` iff its held-out Predictor accuracy is at least `current`'s plus `min_gain`."""
    before, after = current.predictor_accuracy, candidate.predictor_accuracy
    name = current.adapter or "the base model"
    if after >= before + min_gain:
        return GateDecision(
            adopted=True, reason=f"held-out accuracy {after:.3f} >= {before:.3f} of {name}", before=before, after=after
        )
    return GateDecision(
        adopted=False,
        reason=f"regression: held-out accuracy {after:.3f} < {before:.3f} of {name}; keeping {name}",
        before=before,
        after=after,
    )
