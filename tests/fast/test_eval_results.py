"""An evaluation's results (`evals.results`): the score against hand-computed numbers, file-safe result paths,
and a TaskResult's save/load round trip."""

from __future__ import annotations

import pytest

from evals.evaluators import CheckResult
from evals.results import EvalRun, StepTrace, TaskResult, load_results, result_path, score
from explorer.records import Action


def result(task_id: str, success: bool, steps: int, tokens: int = 0, fallbacks: int = 0) -> TaskResult:
    """A finished task of `steps` actions (no stop step, so the trajectory has `steps` entries)."""
    trajectory = [
        StepTrace(step=i, url="http://shop.test/", action=Action(kind="scroll"), fallback=i < fallbacks)
        for i in range(steps)
    ]
    return TaskResult(
        task_id=task_id,
        suite="bundled:shop:dev",
        intent="Open the Backpacks category.",
        success=success,
        score=float(success),
        steps=steps,
        reason="hand-made",
        trajectory=trajectory,
        tokens=tokens,
        fallbacks=fallbacks,
    )


def test_score_against_hand_computed_numbers():
    results = [
        result("a", True, 2, tokens=100),
        result("b", False, 5, tokens=300, fallbacks=2),
        result("c", True, 4, tokens=200, fallbacks=1),
        result("d", False, 0),  # ended at once (an error page, nothing to act on)
    ]
    s = score(results)
    assert s.n == 4
    assert s.sr == 0.5  # 2 of 4
    assert s.avg_steps == 2.75  # (2 + 5 + 4 + 0) / 4
    assert s.avg_steps_success == 3.0  # (2 + 4) / 2
    assert s.tokens_per_trajectory == 150.0  # (100 + 300 + 200 + 0) / 4
    assert s.fallback_rate == 0.2727  # 3 fallbacks in 11 steps, rounded to 4 places


def test_score_without_successes_or_results():
    s = score([result("a", False, 3, tokens=7), result("b", False, 2, tokens=8)])
    assert (s.sr, s.avg_steps, s.avg_steps_success, s.tokens_per_trajectory) == (0.0, 2.5, None, 7.5)
    empty = score([])
    assert (empty.n, empty.sr, empty.avg_steps, empty.avg_steps_success) == (0, 0.0, 0.0, None)
    assert (empty.tokens_per_trajectory, empty.fallback_rate) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("task_id", "stem"),
    [
        ("shop-nav-01", "shop-nav-01"),
        ("click-button:0", "click-button_0-"),
        ("a/b c", "a_b_c-"),
        ("../../etc/passwd", ".._.._etc_passwd-"),
        ("42", "42"),
    ],
)
def test_result_path_is_file_safe(tmp_path, task_id, stem):
    """A safe id is its own file name; an id made safe gets a short hash of itself, so ids never share a file."""
    path = result_path(tmp_path, task_id)
    assert path.parent == tmp_path / "results"  # never outside the results folder
    assert path.name == f"{stem}.json" if not stem.endswith("-") else path.name.startswith(stem)
    assert len(path.stem) == len(stem) + (8 if stem.endswith("-") else 0)


def test_ids_made_safe_the_same_way_keep_their_own_files(tmp_path):
    assert result_path(tmp_path, "a:b") != result_path(tmp_path, "a/b")


def test_task_result_round_trip(tmp_path):
    original = result("click-button:3", True, 2, tokens=55, fallbacks=1).model_copy(
        update={
            "answer": "$80",
            "checks": [CheckResult(eval_type="string_match", score=1.0, reason="exact match")],
            "seconds": 1.25,
            "ended_by": "stop",
        }
    )
    original.trajectory[0] = original.trajectory[0].model_copy(
        update={"action": Action(kind="type", mark=4, label='searchbox "Search"', text="boots", press_enter=True)}
    )
    path = original.save(result_path(tmp_path, original.task_id))
    assert path.parent == tmp_path / "results" and path.name.startswith("click-button_3-")
    loaded = TaskResult.load(path)
    assert loaded == original
    assert loaded.brief() == {
        "task_id": "click-button:3",
        "success": True,
        "steps": 2,
        "answer": "$80",
        "reason": "hand-made",
    }
    run = EvalRun(eval_id="e", suite="miniwob", policy="random", max_steps=3, task_ids=["click-button:3", "other"])
    assert load_results(tmp_path, run) == [loaded]  # the unfinished task has no result yet
