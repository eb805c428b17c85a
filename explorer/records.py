"""Typed records that cross module boundaries: elements, observations, actions, browser events.

Records only; the logic that builds or acts on them lives in `observe`, `browser` and friends.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Box = tuple[float, float, float, float]  # x, y, w, h in CSS px of the top-level viewport

ActionKind = Literal["click", "type", "select", "scroll", "hover", "back", "goto", "stop"]
EventKind = Literal[
    "dialog",
    "popup",
    "download",
    "blocked_request",
    "refused",
    "timeout",
    "crash",
    "http_error",
    "navigation_error",
    "dialog_flood",
    "navigation_loop",
    "observe_error",
]


class Element(BaseModel):
    """One interactive element of an observation, numbered by its Set-of-Mark `mark`."""

    model_config = ConfigDict(frozen=True)

    mark: int
    tag: str
    role: str
    name: str
    value: str = ""
    href: str | None = None
    input_type: str | None = None
    options: tuple[str, ...] = ()
    bbox: Box
    point: tuple[float, float]  # a point inside bbox where a hit test lands on this element
    visible: bool = True
    enabled: bool = True
    submits: bool = False  # a submit button, or a text field whose Enter submits its form
    # where a submitting control sends its form (formaction, else the form's action), or where an inline script
    # sends a click (a literal location/window.open URL, data-href)
    target: str | None = None
    method: str | None = None  # ... and with which method (GET, POST, DIALOG)
    frame: tuple[str, ...] = ()  # structural paths of the iframes that hold it, outermost first
    path: str = ""  # structural path inside its document (shadow roots marked with `>>`)
    key: str  # stable identity across observations: see observe.element_key


class Observation(BaseModel):
    """What the agent sees at one moment: page identity, elements, screenshots and a text form."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    url: str
    title: str
    status: int | None = None  # HTTP status of the last main-frame navigation
    headings: list[str] = Field(default_factory=list)
    texts: list[str] = Field(default_factory=list)  # visible text blocks (paragraphs, list items, cells)
    elements: list[Element]
    screenshot: bytes = Field(repr=False)  # PNG of the viewport
    som_screenshot: bytes = Field(repr=False)  # the same PNG with Set-of-Mark boxes and numbers
    text: str  # the element list rendered for a text model
    viewport: tuple[int, int]
    scroll: tuple[float, float] = (0.0, 0.0)
    timestamp: float = Field(default_factory=time.time)
    # boxes that state identity paints flat (explorer/js/volatile.js): parts of the page (fields, relative
    # times, the site's volatile selectors), and what the browser draws over it for a moment (focus ring,
    # validation bubble), masked on both sides of a comparison
    volatile: list[Box] = Field(default_factory=list)
    overlays: list[Box] = Field(default_factory=list)

    def element(self, mark: int) -> Element | None:
        """The element carrying SoM number `mark`, or None."""
        for el in self.elements:
            if el.mark == mark:
                return el
        return None


class Action(BaseModel):
    """One browser action; `describe()` is its natural-language form for prompts and datasets."""

    model_config = ConfigDict(frozen=True)

    kind: ActionKind
    mark: int | None = None
    element_key: str | None = None
    label: str = ""  # role + name of the target element, for describe()
    text: str | None = None
    press_enter: bool = False
    option: str | None = None
    url: str | None = None
    direction: Literal["up", "down"] | None = None
    answer: str | None = None  # a `stop`'s answer to an information-seeking task

    @classmethod
    def on(cls, element: Element, kind: ActionKind = "click", **fields: object) -> Action:
        """An action aimed at `element` (its mark, key and label filled in)."""
        label = f'{element.role} "{element.name}"' if element.name else element.role
        return cls(kind=kind, mark=element.mark, element_key=element.key, label=label, **fields)

    def describe(self) -> str:
        """Natural-language description, e.g. `click link "Laptops"`."""
        target = self.label or (f"element [{self.mark}]" if self.mark is not None else "the page")
        match self.kind:
            case "click":
                return f"click {target}"
            case "type":
                enter = " and press Enter" if self.press_enter else ""
                return f'type "{self.text or ""}" into {target}{enter}'
            case "select":
                return f'select "{self.option or ""}" in {target}'
            case "scroll":
                where = "" if self.mark is None else f" inside {target}"
                return f"scroll {self.direction or 'down'}{where}"
            case "hover":
                return f"hover over {target}"
            case "back":
                return "go back"
            case "goto":
                return f"go to {self.url}"
            case _:
                return "stop" if self.answer is None else f'stop and answer "{self.answer}"'


class BrowserEvent(BaseModel):
    """Something the browser did or refused during an action: a dialog, a blocked request, a crash."""

    kind: EventKind
    detail: str = ""
    url: str = ""
    timestamp: float = Field(default_factory=time.time)


class ActionOutcome(BaseModel):
    """The result of executing one action: where it went and every event on the way."""

    action: Action
    ok: bool
    error: str | None = None
    url_before: str
    url_after: str
    status: int | None = None
    new_tab: str | None = None
    navigation: str | None = None  # method (GET/POST) of the document load the action caused, if any
    dialogs: list[str] = Field(default_factory=list)
    events: list[BrowserEvent] = Field(default_factory=list)
    seconds: float = 0.0


NodeStatus = Literal["unexplored", "partial", "full"]


class Node(BaseModel):
    """One state of the SCALE-Hop graph: a normalized URL plus what its screenshot shows."""

    id: str
    url: str  # normalized
    raw_url: str
    title: str = ""
    screenshot: str  # content hash of the PNG in the run's blobs/
    observation: str | None = None  # content hash of the full Observation (JSON blob; see RunStore.observation)
    status: NodeStatus = "unexplored"
    visits: int = 0
    tried: list[str] = Field(default_factory=list)  # element keys actuated here
    element_keys: list[str] = Field(default_factory=list)  # keys of the elements seen when first observed
    volatile: list[Box] = Field(default_factory=list)  # the observation's volatile boxes (state identity)
    overlays: list[Box] = Field(default_factory=list)  # and its overlays (focus ring, validation bubble)
    depth: int = 0
    addressable: bool | None = None  # does loading the URL alone reproduce the state? None: not known yet
    unreachable: str | None = None  # why return-to-node gave up on it
    created_step: int = 0


class Edge(BaseModel):
    """An action that led from one node to another, with how often it did and the last verdict."""

    src: str
    dst: str
    action: Action
    count: int = 1
    last_verdict: bool | None = None

    @property
    def key(self) -> str:
        """Edges are distinct per (src, dst, action)."""
        return f"{self.src}|{self.dst}|{self.action.model_dump_json()}"


class ElementBrief(BaseModel):
    """An element as a transition mentions it."""

    key: str
    role: str
    name: str

    def describe(self) -> str:
        """e.g. `button "Post reply"`."""
        return f'{self.role} "{self.name}"' if self.name else self.role


class ElementChange(ElementBrief):
    """An element present before and after whose name, value or enabled state changed."""

    field: Literal["name", "value", "enabled"]
    before: str
    after: str


class Transition(BaseModel):
    """What an action really did: the diff of two observations (after WMA's transition abstraction)."""

    url_before: str
    url_after: str
    url_changed: bool
    title_before: str
    title_after: str
    headings_after: list[str] = Field(default_factory=list)
    added: list[ElementBrief] = Field(default_factory=list)
    removed: list[ElementBrief] = Field(default_factory=list)
    changed: list[ElementChange] = Field(default_factory=list)
    texts_added: list[str] = Field(default_factory=list)
    texts_removed: list[str] = Field(default_factory=list)
    dialog: str | None = None
    new_tab: str | None = None
    error: str | None = None
    ssim: float
    description: str  # deterministic summary: the Judger's ground truth and the Predictor's target


class Prediction(BaseModel):
    """The Predictor's guess of what an action will do."""

    navigates: bool
    expected_title: str | None = None
    expected_url: str | None = None
    change: str = ""  # what will appear, disappear or update
    reasoning: str = ""
    fallback: bool = False  # the model's output did not parse: this is the recorded fallback
    raw: str = ""  # the model's text
    hint: str | None = None  # the transition memory's hint the Predictor was shown (rebuilds the prompt exactly)


class Verdict(BaseModel):
    """The Judger's comparison of a Prediction with a Transition: j=1 correct, j=0 a cognitive boundary."""

    correct: bool
    score: float
    reason: str
    judge: str  # which judger and version


class Selection(BaseModel):
    """The Selector's pick: the action the model understands least, and why."""

    action: Action
    reasoning: str = ""
    fallback: bool = False
    raw: str = ""


class ExploreRecord(BaseModel):
    """⟨O_i, a_i, r_sel_i, t_i, r_t_i⟩ as in SCALE, with prediction, verdict and lineage."""

    run_id: str
    step: int
    round: int = 0
    node_from: str
    node_to: str
    observation_text: str  # O_i as the text model saw it
    screenshot: str  # blob hash of O_i's screenshot
    som_screenshot: str  # blob hash of O_i's Set-of-Mark screenshot
    observation: str | None = None  # blob hash of the full O_i (RunStore.observation rebuilds it)
    url: str
    action: Action  # a_i
    selector_reasoning: str  # r_sel_i
    transition: Transition  # t_i (its description is the true outcome)
    outcome_reasoning: str  # r_t_i: why the true outcome happened
    prediction: Prediction
    verdict: Verdict
    model_id: str
    adapter_id: str | None = None
