"""The round's gate on task success: the paired comparison (wins, losses, the exact sign test) and how it combines
with the held-out Predictor's decision. Hand-computed truths."""

from __future__ import annotations

import pytest

from evals.results import TaskResult
from training.gate import GateDecision, decide
from training.paired import paired_sr, sign_test


def results(outcomes: str, steps: int = 3) -> list[TaskResult]:
    """One result per character: '1' a success, '0' a failure; task ids t0, t1, ..."""
    return [
        TaskResult(task_id=f"t{i}", suite="s", intent="i", success=c == "1", score=float(c == "1"), steps=steps,
                   reason="")
        for i, c in enumerate(outcomes)
    ]  # fmt: skip


def test_sign_test_is_the_binomial_tail():
    assert sign_test(0, 0) == 1.0  # no discordant pair: no evidence either way
    assert sign_test(4, 4) == 1 / 16
    assert sign_test(3, 4) == 5 / 16  # P(X >= 3) = (4 + 1) / 16
    assert sign_test(0, 5) == 1.0


def test_paired_counts_wins_losses_and_scores_both_sides():
    p = paired_sr(results("110000", steps=2), results("011110", steps=4))
    assert (p.n, p.wins, p.losses, p.both) == (6, 3, 1, 1)
    assert p.before.sr == round(2 / 6, 4) and p.after.sr == round(4 / 6, 4) and p.gain == round(2 / 6, 4)
    assert p.before.avg_steps == 2 and p.after.avg_steps == 4
    assert p.p_better == 5 / 16 and p.p_worse == 15 / 16
    assert p.verdict() == "same"  # a 3-1 split is what noise gives a third of the time


def test_paired_needs_the_same_tasks():
    with pytest.raises(ValueError, match="same tasks"):
        paired_sr(results("11"), results("111"))


def test_a_significant_loss_rejects_whatever_the_predictor_says():
    paired = paired_sr(results("11110"), results("00000"))
    assert paired.p_worse == 1 / 16 and paired.verdict() == "worse"
    predictor = GateDecision(adopted=True, reason="held-out accuracy 0.5 >= 0.4", before=0.4, after=0.5, floor=0.3)
    d = decide(predictor, paired)
    assert not d.adopted and d.reason.startswith("task SR regression: task SR 0.800 -> 0.000")
    assert "held-out Predictor: held-out accuracy" in d.reason and (d.before, d.after, d.floor) == (0.4, 0.5, 0.3)


def test_a_significant_gain_adopts_and_noise_leaves_it_to_the_predictor():
    gain = paired_sr(results("00000"), results("11110"))
    refused = GateDecision(adopted=False, reason="at or below the floor", before=0.4, after=0.4, floor=0.5)
    assert decide(refused, gain).adopted and decide(None, gain).reason.startswith("task SR gain")
    noise = paired_sr(results("10000"), results("01100"))  # 2 wins, 1 loss: p 0.5
    assert decide(refused, noise).adopted is False and "within noise" in decide(refused, noise).reason
    accepted = refused.model_copy(update={"adopted": True, "reason": "held-out accuracy 0.6 >= 0.4"})
    assert decide(accepted, noise).adopted  # the Predictor decides when task success cannot
    assert not decide(None, noise).adopted  # neither measure says it is better: keep the current model
    assert decide(accepted, None) is accepted and decide(None, None) is None
