"""Dataset rows: each task as a dict matching its schema in `datasets/schemas/<task_type>.json`, images as PNG
bytes, plus its chat-format SFT view (`messages`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache

from datasets import Features
from explorer.models import Message
from explorer.records import Action
from explorer.roles.actor import ANSWER_REASON, STOP_REASON
from synthesis.prompting import template
from synthesis.records import MultiStepTask, PageQA, SingleStepTask, Task, TaskType
from synthesis.resources import datasets_dir

Blob = Callable[[str], bytes]  # screenshot digest -> PNG bytes


@cache
def features(task_type: TaskType) -> Features:
    """The HF Features of a split, from its declarative schema file."""
    schema = datasets_dir() / "schemas" / f"{task_type}.json"
    return Features.from_dict(json.loads(schema.read_text(encoding="utf-8")))


def to_row(task: Task, blob: Blob) -> dict:
    """The dataset row of a task (images resolved through `blob`)."""
    head = {"id": task.id, "task_type": task.task_type, "site": task.site}
    tail = {
        "generator": task.generator,
        "fallback": task.fallback,
        "messages": messages(task),
        "lineage": task.lineage.model_dump(),
    }
    if isinstance(task, SingleStepTask):
        body = task.model_dump(
            include={
                "url",
                "title",
                "instruction",
                "observation_text",
                "page_texts",
                "action",
                "action_text",
                "outcome",
                "reasoning",
                "goal_observation_text",
                "goal_page_texts",
                "answer",
            }
        )
        body |= {
            "screenshot": _image(blob, task.screenshot),
            "som_screenshot": _image(blob, task.som_screenshot),
            "target": task.target.model_dump() if task.target else None,
        }
    elif isinstance(task, MultiStepTask):
        body = task.model_dump(
            include={
                "start_url",
                "goal_url",
                "goal_title",
                "instruction",
                "replay_ssim",
                "goal_observation_text",
                "goal_page_texts",
                "answer",
            }
        )
        body |= {
            "num_steps": len(task.steps),
            "steps": [s.model_dump(exclude={"screenshot"}) for s in task.steps],
            "images": [_image(blob, s.screenshot) for s in task.steps],
            "goal_image": _image(blob, task.goal_screenshot),
        }
    else:
        body = task.model_dump(
            include={"url", "title", "qa_kind", "question", "answer", "observation_text", "page_texts"}
        )
        body["screenshot"] = _image(blob, task.screenshot)
    return head | body | tail


def _image(blob: Blob, digest: str) -> dict:
    return {"bytes": blob(digest), "path": None}


def messages(task: Task) -> list[Message]:
    """The chat-format SFT view: system, the page and task, then the answer (a turn per step for multi-step, and a
    `stop` turn on the goal page when the row kept it, with the answer of an information-seeking task)."""
    if isinstance(task, PageQA):
        system, _ = template("page_qa")
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": f"{task.observation_text}\nQuestion: {task.question}"},
            {"role": "assistant", "content": task.answer},
        ]
    system, _ = template("agent")
    chat = [{"role": "system", "content": system}]
    if isinstance(task, SingleStepTask):
        turns = [(task.observation_text, task.reasoning, task.action, task.action_text)]
    else:
        turns = [(s.observation_text, s.reasoning, s.action, s.action_text) for s in task.steps]
    if task.goal_observation_text:  # the task ends on its goal page: stop, with the answer when it asks for one
        stop = Action(kind="stop", answer=task.answer or None)
        turns.append((task.goal_observation_text, ANSWER_REASON if task.answer else STOP_REASON, stop, ""))
    for i, (page, reasoning, action, action_text) in enumerate(turns):
        user = f"Task: {task.instruction}\n{page}" if i == 0 else page
        mark = f"[{action.mark}] " if action.mark is not None else ""
        action_text = action_text or action.describe()
        chat += [
            {"role": "user", "content": user},
            {"role": "assistant", "content": f"REASON: {reasoning}\nACTION: {mark}{action_text}"},
        ]
    return chat
