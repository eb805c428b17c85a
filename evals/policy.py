"""What an agent policy is to the evaluation harness: given the task's intent, the current observation and the
steps so far, decide one action (a `stop`, with an optional answer, ends the episode)."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, Field

from explorer.records import Action, Observation

System = Literal["actor", "world-model", "random", "ranker", "scripted"]


class Considered(BaseModel):
    """A candidate the world model weighed: the action, its predicted outcome, and that outcome's value."""

    action: Action
    outcome: str  # the Predictor's outcome (for `stop`: the current page itself)
    value: float  # embedding similarity of the outcome and the task's intent
    fallback: bool = False  # the Predictor's answer did not parse: the outcome is its default


class Decision(BaseModel):
    """One step's choice: the action, why, how sure, and which system chose it."""

    action: Action
    reasoning: str = ""
    confidence: float | None = None  # the model's probability of its chosen mark (None: not measured)
    fallback: bool = False  # the model's answer did not parse: a heuristic chose (counted as a failed step)
    system: System = "actor"
    tokens: int = 0  # model tokens in and out spent on this decision
    ranking: list[int] = Field(default_factory=list)  # the Actor's marks, likeliest first (empty: not scored)
    considered: list[Considered] = Field(default_factory=list)  # the world model's candidates, if it chose
    trigger: str | None = None  # why the world model took over from the Actor (adaptive policies)


class HistoryItem(BaseModel):
    """An earlier step as the policy sees it."""

    action: Action
    url: str  # the page it was taken on
    changed: bool  # whether it changed the page (a new URL or a visible change)


class Policy(Protocol):
    """An agent: `decide(intent, obs, history)` -> Decision. A policy may also have `begin_episode(task_id)`,
    which the harness calls before each task (e.g. to reseed)."""

    name: str

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """The next action for `intent` on `obs`, after `history`."""
        ...
