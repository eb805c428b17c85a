"""Text gates: length and format checks, and dedup of near-identical instructions (questions for page QA).

Each gate returns the tasks it keeps and a `Drop` (with its reason) for each task it removes.
"""

from __future__ import annotations

import re

from synthesis.recipe import Gates
from synthesis.records import Drop, MultiStepTask, PageQA, SingleStepTask, Task

_WORD = re.compile(r"\w+")


def headline(task: Task) -> str:
    """The text a task is asked by: its instruction, or for page QA its question."""
    return task.question if isinstance(task, PageQA) else task.instruction


def format_problem(task: Task, gates: Gates) -> str | None:
    """Why a task fails the length and format checks, or None."""
    words = len(headline(task).split())
    if words < gates.min_words:
        return f"{words} words in the instruction, fewer than {gates.min_words}"
    if words > gates.max_words:
        return f"{words} words in the instruction, more than {gates.max_words}"
    texts = _texts(task)
    empty = [name for name, text in texts.items() if not text.strip()]
    if empty:
        return f"empty {', '.join(empty)}"
    long = [name for name, text in texts.items() if len(text) > gates.max_chars]
    if long:
        return f"{', '.join(long)} longer than {gates.max_chars} characters"
    if isinstance(task, MultiStepTask) and not task.steps:
        return "a multi-step task without steps"
    if isinstance(task, PageQA) and not task.question.rstrip().endswith("?"):
        return "the question does not end with a question mark"
    return None


def _texts(task: Task) -> dict[str, str]:
    if isinstance(task, SingleStepTask):
        return {"instruction": task.instruction, "reasoning": task.reasoning, "observation": task.observation_text}
    if isinstance(task, MultiStepTask):
        texts = {"instruction": task.instruction}
        for i, step in enumerate(task.steps, 1):
            texts |= {f"step {i} reasoning": step.reasoning, f"step {i} observation": step.observation_text}
        return texts
    return {"question": task.question, "answer": task.answer, "observation": task.observation_text}


def check_format(tasks: list[Task], gates: Gates) -> tuple[list[Task], list[Drop]]:
    """Keep the tasks that pass the length and format checks."""
    kept, drops = [], []
    for task in tasks:
        problem = format_problem(task, gates)
        if problem is None:
            kept.append(task)
        else:
            drops.append(Drop(id=task.id, task_type=task.task_type, gate="format", reason=problem))
    return kept, drops


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def _start(task: Task) -> str:
    """Where a task starts: near-identical texts only count as duplicates from the same start page."""
    return task.start_url if isinstance(task, MultiStepTask) else task.url


def dedup(tasks: list[Task], gates: Gates) -> tuple[list[Task], list[Drop]]:
    """Keep the first of each group of near-identical tasks: same type, same start URL, and word sets of the
    instruction (question + answer for page QA) overlapping at least `dedup_jaccard`."""
    kept: list[Task] = []
    seen: dict[tuple[str, str], list[tuple[frozenset[str], str]]] = {}
    drops = []
    for task in tasks:
        text = headline(task) + (" " + task.answer if isinstance(task, PageQA) else "")
        words = _words(text)
        group = seen.setdefault((task.task_type, _start(task)), [])
        twin = next(
            (tid for w, tid in group if len(w | words) and len(w & words) / len(w | words) >= gates.dedup_jaccard), None
        )
        if twin is None:
            group.append((words, task.id))
            kept.append(task)
        else:
            drops.append(Drop(id=task.id, task_type=task.task_type, gate="dedup", reason=f"near-identical to {twin}"))
    return kept, drops
