"""Typed records of the dataset stage: lineage, task drafts of the three task types, and gate results.

A draft holds blob digests of its images (resolved to bytes only at export) and the text a generator wrote.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from explorer.records import Action

TaskType = Literal["single_step", "multi_step", "page_qa"]
TASK_TYPES: tuple[TaskType, ...] = ("single_step", "multi_step", "page_qa")
GeneratorName = Literal["template", "model"]


class Lineage(BaseModel):
    """Where a row came from: the run, its graph nodes, the store record, the exploring model and round."""

    run_id: str
    node_ids: list[str]
    record_id: str = ""  # the `records` row of the run store ("" when the row comes from the graph alone)
    step: int = -1  # the store step of that record (-1: none)
    model_id: str = ""  # the model that explored (the generator's model is on the row itself)
    adapter_id: str = ""
    round: int = 0


class TargetElement(BaseModel):
    """The element a single-step action acts on."""

    mark: int
    role: str
    name: str
    tag: str
    bbox: tuple[float, float, float, float]


class Draft(BaseModel):
    """What every task type shares: identity, site, generator bookkeeping and lineage."""

    id: str  # stable: a hash of the run, the nodes/record and the task type
    site: str
    generator: GeneratorName = "template"
    fallback: bool = False  # the model generator was asked, its answer was unusable: template text kept
    lineage: Lineage
    source: int = Field(0, exclude=True)  # index of the run the draft came from (images resolve there)


class SingleStepTask(Draft):
    """One valid exploratory action: instruction, observation, target element/action, reasoning."""

    task_type: Literal["single_step"] = "single_step"
    url: str
    title: str
    instruction: str
    observation_text: str
    page_texts: list[str] = []  # the page's first visible text blocks (the Actor reads them)
    screenshot: str  # blob digest of the observation's screenshot
    som_screenshot: str
    action: Action
    action_text: str
    target: TargetElement | None
    outcome: str  # the transition's ground-truth description
    reasoning: str
    goal_observation_text: str = ""  # the page the action reaches ("": not kept), where the Actor learns to stop
    goal_page_texts: list[str] = []
    answer: str = ""  # what the Actor answers there, `stop "answer"` (an information-seeking task; "": plain stop)
    goal_facts: list[tuple[str, str]] = []  # (question, answer) the goal page states (not exported: synthesis.answers)


class PathStep(BaseModel):
    """One step of a multi-step task: the state before the action, the action and why it is taken."""

    node_id: str
    url: str
    title: str
    observation_text: str
    page_texts: list[str] = []  # the page's first visible text blocks (the Actor reads them)
    screenshot: str  # blob digest
    action: Action
    action_text: str
    outcome: str  # what the action did (the transition's description when a record has it)
    reasoning: str


class MultiStepTask(Draft):
    """A coherent path of the graph: from a URL-addressable start to a goal state, with per-step reasoning."""

    task_type: Literal["multi_step"] = "multi_step"
    start_url: str  # the raw URL of the start node (replay loads it)
    goal_url: str
    goal_title: str
    goal_screenshot: str  # blob digest of the goal node's screenshot (the replay target)
    instruction: str
    steps: list[PathStep]
    replay_ssim: float | None = None  # set by the replay gate
    goal_observation_text: str = ""  # the goal page, where the Actor learns to stop ("": not kept)
    goal_page_texts: list[str] = []
    answer: str = ""  # what the Actor answers there, `stop "answer"` (an information-seeking task; "": plain stop)
    goal_facts: list[tuple[str, str]] = []  # (question, answer) the goal page states (not exported: synthesis.answers)


class PageQA(Draft):
    """A question about one state's content, with its grounded answer."""

    task_type: Literal["page_qa"] = "page_qa"
    url: str
    title: str
    qa_kind: Literal["title", "heading", "sections", "fields", "fact", "outcome"]
    question: str
    answer: str
    observation_text: str
    page_texts: list[str] = []  # the page's first visible text blocks (the Actor reads them)
    screenshot: str


Task = SingleStepTask | MultiStepTask | PageQA


ReplayCause = Literal["element missing", "action failed", "browser", "url", "structure", "pixels"]


class Drop(BaseModel):
    """A task a gate removed, and why."""

    id: str
    task_type: TaskType
    gate: Literal["format", "dedup", "replay"]
    reason: str
    site: str = ""
    cause: ReplayCause | None = None  # the replay gate's: which test failed (see synthesis.replay)
