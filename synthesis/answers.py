"""Information-seeking tasks: the path of a navigation task, then an answer read on the page it reaches.

Reverse construction builds tasks that end on a page (`Open the "Timber Cooler" page.`); a user also asks for what
a page says (`What is the price of "Timber Cooler"?`). For each single- or multi-step task whose goal page states a
fact (`templates.page_facts`), `answer_tasks` makes one more task with the same actions: the fact's question as
its instruction, and the fact as its `answer`, which the Actor gives on the goal page with `stop "answer"`. A fact
that a page before the last action already shows is not asked: there the Actor should answer, not act on.
They are made from the rows that passed the gates (`build_dataset`), so a path is replayed once. A row keeps its
parent's `generator` (which wrote its reasoning); its question is template text by design, never a `fallback`.
"""

from __future__ import annotations

from collections.abc import Sequence

from synthesis.records import MultiStepTask, SingleStepTask, Task
from synthesis.source import task_id


def answer_tasks(tasks: Sequence[Task]) -> list[Task]:
    """One information-seeking task per single- or multi-step task in `tasks` whose goal page states a fact (see
    the module doc). Which fact is fixed by the task's id, so tasks reaching one page ask different questions."""
    out: list[Task] = []
    for task in tasks:
        if not isinstance(task, SingleStepTask | MultiStepTask) or task.answer:
            continue
        before = [task.page_texts] if isinstance(task, SingleStepTask) else [s.page_texts for s in task.steps]
        facts = [(q, a) for q, a in task.goal_facts if not any(a in t for texts in before for t in texts)]
        if not facts:
            continue
        question, answer = facts[int(task.id, 16) % len(facts)]
        update = {"id": task_id(task.id, "answer", question), "instruction": question, "answer": answer}
        out.append(task.model_copy(update=update | {"goal_facts": [], "fallback": False}))
    return out
