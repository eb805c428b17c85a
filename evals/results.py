"""An evaluation's typed results: one `TaskResult` per task (its trajectory, the evaluator's verdict and why) and
the `EvalRun` that names the settings; both are files in the evaluation's folder, written as each task ends.

    <evals_dir>/<eval_id>/
      eval.json                 EvalRun: suite, policy, model, adapter, limits, the task ids in order
      results/<task>.json       TaskResult, written atomically when the task ends (a resumed eval skips it)
      blobs/                    the trajectories' screenshots, content-addressed
"""

from __future__ import annotations

import hashlib
import re
import statistics
from pathlib import Path

from pydantic import BaseModel

from evals.evaluators import CheckResult
from evals.policy import System
from explorer.artifact import Artifact
from explorer.records import Action


class StepTrace(BaseModel):
    """One step of a trajectory: where, what the policy chose and why, and what the browser said."""

    step: int
    url: str
    action: Action
    reasoning: str = ""
    system: System = "actor"
    confidence: float | None = None
    fallback: bool = False
    tokens: int = 0
    screenshot: str | None = None  # blob hash of the screenshot the decision was made on
    error: str | None = None  # the browser's error for this action, if any


class TaskResult(Artifact):
    """One task's outcome: success by the task's own check, steps, the answer, the reason, the trajectory."""

    FILE = "result.json"
    SCHEMA = 1

    task_id: str
    suite: str
    intent: str
    success: bool
    score: float
    steps: int
    answer: str | None = None
    reason: str
    checks: list[CheckResult] = []
    trajectory: list[StepTrace] = []
    tokens: int = 0
    fallbacks: int = 0  # steps whose model answer did not parse
    seconds: float = 0.0
    ended_by: str = ""  # stop | max_steps | done (MiniWoB) | error

    def brief(self) -> dict:
        """The per-task fields of the `--json` summary."""
        return {
            "task_id": self.task_id,
            "success": self.success,
            "steps": self.steps,
            "answer": self.answer,
            "reason": self.reason,
        }


class EvalRun(Artifact):
    """What an evaluation runs: the suite, the policy and model, and the tasks in order."""

    FILE = "eval.json"
    SCHEMA = 1

    eval_id: str
    suite: str
    policy: str
    model: str | None = None
    adapter: str | None = None
    max_steps: int
    seed: int = 0
    shots: int = 0  # few-shot demonstrations per decision
    dataset: str | None = None  # where they were retrieved from
    task_ids: list[str]

    def differs(self, other: EvalRun) -> list[str]:
        """The settings in which `other` is another evaluation (empty: the same one, which may be resumed)."""
        same = ("suite", "policy", "model", "adapter", "max_steps", "seed", "shots", "dataset", "task_ids")
        return [k for k in same if getattr(self, k) != getattr(other, k)]


class Score(BaseModel):
    """Success rate and average steps over a set of results, with the tokens a trajectory cost."""

    n: int
    sr: float  # success rate
    avg_steps: float  # over every task
    avg_steps_success: float | None  # over the successful ones (None: none succeeded)
    tokens_per_trajectory: float
    fallback_rate: float  # of all decisions (a final stop included)


def score(results: list[TaskResult]) -> Score:
    """SR, AS and cost of `results` (an empty list scores 0)."""
    steps = [r.steps for r in results]
    won = [r.steps for r in results if r.success]
    decisions = sum(len(r.trajectory) for r in results)  # a final stop is a decision too
    return Score(
        n=len(results),
        sr=round(sum(r.success for r in results) / len(results), 4) if results else 0.0,
        avg_steps=round(statistics.fmean(steps), 2) if steps else 0.0,
        avg_steps_success=round(statistics.fmean(won), 2) if won else None,
        tokens_per_trajectory=round(statistics.fmean(r.tokens for r in results), 1) if results else 0.0,
        fallback_rate=round(sum(r.fallbacks for r in results) / decisions, 4) if decisions else 0.0,
    )


def result_path(folder: str | Path, task_id: str) -> Path:
    """Where a task's result lives in an evaluation folder: the id made file-safe, with a short hash of the id
    when that changed it (so `a:b` and `a/b` never share a file)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", str(task_id))
    if safe != str(task_id):
        safe += "-" + hashlib.sha256(str(task_id).encode()).hexdigest()[:8]
    return Path(folder) / "results" / f"{safe}.json"


def load_results(folder: str | Path, run: EvalRun) -> list[TaskResult]:
    """The finished tasks' results, in the run's task order."""
    paths = [result_path(folder, t) for t in run.task_ids]
    return [TaskResult.load(p) for p in paths if p.exists()]
