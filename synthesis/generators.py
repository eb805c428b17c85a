"""The model generator: rewrites the template text of tasks with a chat model, prompts in `synthesis/prompts/*.md`.

The template generator is the builders themselves (deterministic text from titles, headings, element names
and transitions). The model generator starts from that text: each model answer is parsed defensively, and an
answer that does not parse, is out of bounds or is not grounded in the task keeps the template text; the row
then says `fallback = true`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from explorer.models import ChatModel, Message
from synthesis.prompting import prompt
from synthesis.records import MultiStepTask, PageQA, SingleStepTask, Task
from synthesis.templates import short_title

ROLE = "synthesis"  # the role name model usage is accounted under
_QUOTED = re.compile(r'"([^"]{2,})"')
_KEY_TERMS = {"title": ["title"], "heading": ["heading"], "sections": ["listed"], "fields": ["field"]}
_FACT = re.compile(r"^What is the (.+?) of |^How many (\w+) ")  # what a fact question asks for (templates.page_facts)


def parse_line(raw: str, min_words: int, max_words: int, must_contain: list[str], ends: str = "") -> str | None:
    """The first line of an answer, if it is within bounds, names every required term, and ends as required."""
    line = raw.strip().splitlines()[0].strip().strip('"').strip() if raw.strip() else ""
    words = line.split()
    if not min_words <= len(words) <= max_words or (ends and not line.endswith(ends)):
        return None
    if any(term.lower() not in line.lower() for term in must_contain):
        return None
    if re.search(r"\b(INSTRUCTION|REASON|QUESTION|ANSWER):", line):
        return None  # the model restarted the format instead of answering
    return line


@dataclass
class _Ask:
    """One field of one task to rewrite."""

    task: int
    apply: Callable[[Task, str], Task]
    messages: list[Message]
    parse: Callable[[str], str | None]


class ModelGenerator:
    """Rewrites instructions, per-step reasoning and questions with `model`, one batch for all tasks."""

    def __init__(self, model: ChatModel, max_tokens: int = 48):
        self.model = model
        self.max_tokens = max_tokens

    def write(self, tasks: list[Task]) -> list[Task]:
        """The tasks with model-written text; each says `generator="model"`, and `fallback` when any field of it
        kept the template text."""
        asks = [ask for i, task in enumerate(tasks) for ask in self._asks(i, task)]
        answers = self.model.generate_batch(
            [a.messages for a in asks], max_tokens=self.max_tokens, stop=["\n"], role=ROLE
        )
        out = [t.model_copy(update={"generator": "model"}) for t in tasks]
        for ask, gen in zip(asks, answers, strict=True):
            text = ask.parse(gen.text)
            if text is None:
                out[ask.task] = out[ask.task].model_copy(update={"fallback": True})
            else:
                out[ask.task] = ask.apply(out[ask.task], text)
        return out

    def _asks(self, i: int, task: Task) -> list[_Ask]:
        if isinstance(task, SingleStepTask):
            return [
                self._instruction(i, task, short_title(task.title), task.action_text, task.outcome),
                _reasoning(i, _set("reasoning"), task.instruction, task.title, task.action_text, task.outcome),
            ]
        if isinstance(task, MultiStepTask):
            actions = "; ".join(s.action_text for s in task.steps)
            asks = [self._instruction(i, task, short_title(task.steps[0].title), actions, task.goal_title)]
            for k, step in enumerate(task.steps):
                asks.append(_reasoning(i, _set_step(k), task.instruction, step.title, step.action_text, step.outcome))
            return asks
        return [self._question(i, task)]

    def _instruction(self, i: int, task: Task, start: str, actions: str, result: str) -> _Ask:
        draft = task.instruction
        msgs = prompt("instruction", "Reworded:", site=task.site, start=start, actions=actions, result=result,
                      draft=draft)  # fmt: skip
        terms = _QUOTED.findall(draft)  # the names it asks for must survive the rewording

        def parse(raw: str) -> str | None:
            line = parse_line(raw, 3, 40, terms)
            return None if line is None or line.lower().startswith(("the user", "user ")) else line

        return _Ask(i, _set("instruction"), msgs, parse)

    def _question(self, i: int, task: PageQA) -> _Ask:
        text = " | ".join(task.observation_text.splitlines()[1:8])[:400]
        msgs = prompt("question", "Reworded:", page=task.title, text=text, draft=task.question)
        terms = _QUOTED.findall(task.question) + _KEY_TERMS.get(task.qa_kind, [])
        if task.qa_kind == "fact" and (asked := _FACT.match(task.question)):
            terms.append(asked.group(1) or asked.group(2))  # a rewording asks for the same fact
        return _Ask(i, _set("question"), msgs, lambda raw: parse_line(raw, 3, 30, terms, ends="?"))


def _reasoning(i: int, apply: Callable[[Task, str], Task], goal: str, page: str, action: str, outcome: str) -> _Ask:
    """Why an action: the answer continues "Because" and must name the element acted on."""
    msgs = prompt("reasoning", "Because", goal=goal, page=short_title(page), action=action, outcome=outcome)
    terms = _QUOTED.findall(action)[:1]

    def parse(raw: str) -> str | None:
        line = parse_line(raw, 4, 60, terms)
        return None if line is None else "Because " + line

    return _Ask(i, apply, msgs, parse)


def _set(field: str) -> Callable[[Task, str], Task]:
    return lambda task, text: task.model_copy(update={field: text})


def _set_step(k: int) -> Callable[[Task, str], Task]:
    def apply(task: Task, text: str) -> Task:
        steps = list(task.steps)
        steps[k] = steps[k].model_copy(update={"reasoning": text})
        return task.model_copy(update={"steps": steps})

    return apply
