"""Paired task success: the current model and a candidate on the same tasks and seeds, compared task by task.

Only the discordant tasks carry information: a *win* is a task the candidate completes and the current model does
not, a *loss* the reverse. Under "no difference" wins and losses are equally likely, so an exact one-sided sign
test (McNemar's exact test) says how surprising the split is. The round's gate (`training.gate.decide`) adopts
on a significant gain and rejects on a significant loss; a split that noise explains decides nothing, so a lucky
episode neither adopts nor rejects an adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

from pydantic import BaseModel

from evals.results import Score, TaskResult, score

ALPHA = 0.1  # one-sided significance of a win/loss split


class PairedSR(BaseModel):
    """Task success of the current model (`before`) and a candidate (`after`) on the same episodes."""

    n: int  # paired tasks
    wins: int  # the candidate succeeds, the current model fails
    losses: int  # the current model succeeds, the candidate fails
    both: int  # both succeed
    before: Score
    after: Score
    p_better: float  # P(wins >= observed | no difference): small means a real gain
    p_worse: float  # P(losses >= observed | no difference): small means a real loss

    @property
    def gain(self) -> float:
        """SR after minus SR before, in points of a share (0.25: 25 points)."""
        return round((self.wins - self.losses) / self.n, 4) if self.n else 0.0

    def verdict(self, alpha: float = ALPHA) -> str:
        """`better`, `worse` or `same` (no split beyond what noise explains at `alpha`)."""
        if self.p_better < alpha:
            return "better"
        if self.p_worse < alpha:
            return "worse"
        return "same"

    def describe(self) -> str:
        """One line: SR before -> after, the split and its p-values."""
        return (
            f"task SR {self.before.sr:.3f} -> {self.after.sr:.3f} on {self.n} paired tasks "
            f"({self.wins} won, {self.losses} lost; p {self.p_better:.3f} better, {self.p_worse:.3f} worse)"
        )


def sign_test(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): the one-sided exact sign test (1.0 when n is 0)."""
    if n == 0:
        return 1.0
    return sum(comb(n, i) for i in range(k, n + 1)) / 2**n


def paired_sr(before: Sequence[TaskResult], after: Sequence[TaskResult]) -> PairedSR:
    """Compare two evaluations of the same tasks (matched by task id; both must hold the same ids)."""
    first = {r.task_id: r.success for r in before}
    second = {r.task_id: r.success for r in after}
    if first.keys() != second.keys():
        missing = sorted(first.keys() ^ second.keys())[:5]
        raise ValueError(f"paired evaluations must cover the same tasks; these are in only one: {missing}")
    wins = sum(second[t] and not first[t] for t in first)
    losses = sum(first[t] and not second[t] for t in first)
    return PairedSR(
        n=len(first),
        wins=wins,
        losses=losses,
        both=sum(first[t] and second[t] for t in first),
        before=score(list(before)),
        after=score(list(after)),
        p_better=round(sign_test(wins, wins + losses), 4),
        p_worse=round(sign_test(losses, wins + losses), 4),
    )
