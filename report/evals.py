"""The report's agent-evaluation section: per evaluation folder (eval.json) its SR and AS, a per-task table and
the failed tasks' trajectories (screenshot, action, reasoning, per step)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from evals.results import EvalRun, Score, load_results, score
from explorer.artifact import ArtifactError
from explorer.blobs import Blobs

TRAJECTORIES_PER_EVAL = 12  # failed tasks whose trajectories are shown, per evaluation


class StepView(BaseModel):
    """One step of a shown trajectory."""

    step: int
    url: str
    action: str
    reasoning: str
    system: str
    error: str | None
    shot: str | None  # image key


class TaskView(BaseModel):
    """A task's row: its verdict and why, and (when failed and shown) its trajectory."""

    task_id: str
    intent: str
    success: bool
    steps: int
    answer: str | None
    reason: str
    trajectory: list[StepView] = []


class EvalView(BaseModel):
    """One evaluation folder as the page shows it."""

    label: str
    suite: str
    policy: str
    model: str | None
    adapter: str | None
    score: Score
    tasks: list[TaskView]
    unfinished: int  # tasks of the run without a result yet (killed, or still running)


def find_evals(root: Path) -> list[Path]:
    """Every evaluation folder (one holding eval.json) at or below `root`, in path order."""
    return sorted(p.parent for p in root.rglob(EvalRun.FILE)) if root.is_dir() else []


def eval_view(folder: Path, label: str, add_image: Callable[[Callable[[str], bytes], str], str]) -> EvalView:
    """What the page shows of one evaluation; `add_image(read, digest)` registers a screenshot."""
    run = EvalRun.load(folder)
    results = load_results(folder, run)
    blobs = Blobs(folder / "blobs")
    failed = [r for r in results if not r.success][:TRAJECTORIES_PER_EVAL]
    shown = {r.task_id for r in failed}
    tasks = []
    for r in results:
        trajectory = []
        if r.task_id in shown:
            trajectory = [
                StepView(
                    step=s.step,
                    url=s.url,
                    action=s.action.describe(),
                    reasoning=s.reasoning,
                    system=s.system,
                    error=s.error,
                    shot=_image(blobs, s.screenshot, add_image),
                )
                for s in r.trajectory
            ]
        tasks.append(TaskView(**r.brief(), intent=r.intent, trajectory=trajectory))
    return EvalView(
        label=label,
        suite=run.suite,
        policy=run.policy,
        model=run.model,
        adapter=run.adapter,
        score=score(results),
        tasks=tasks,
        unfinished=len(run.task_ids) - len(results),
    )


def _image(blobs: Blobs, digest: str | None, add_image) -> str | None:
    """The screenshot's image key, or None when the step has none on disk."""
    return add_image(blobs.get, digest) if digest and blobs.path(digest).exists() else None


def eval_views(root: Path, add_image, notes: list[str]) -> list[EvalView]:
    """Every readable evaluation under `root`; an unreadable one becomes a note."""
    views = []
    for folder in find_evals(root):
        label = str(folder.relative_to(root)) if folder != root else folder.name
        try:
            views.append(eval_view(folder, label, add_image))
        except (ArtifactError, OSError) as e:
            notes.append(f"evaluation {label} could not be read ({e}); it is left out")
    return views
