"""`improve.json`: the typed state of a self-improvement run, rewritten after every round (reports read it).

Layout of an improve run `<runs_dir>/<improve_id>/`:
  explore/round-<k>/<site>/   normal run folders (explorer.run.run_exploration), explored with the adapter in use
  adapters/round-<k>/         peft LoRA folder + card.json (see training.adapters)
  improve.json                ImproveState
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from pydantic import BaseModel

from explorer.artifact import Artifact
from explorer.audit import Floor
from explorer.config import ExploreConfig
from training.config import TrainConfig
from training.evaluate import EvalReport
from training.paired import PairedSR
from training.tasks import TaskEvalConfig


class RoundResult(BaseModel):
    """One round: what was explored, trained and measured, and the gate's decision."""

    round: int  # k, 1-based
    explored_with: str | None  # adapter folder (relative) used to explore this round; None: the base model
    explore_runs: list[str]  # run folders of this round (relative)
    datasets: list[str] = []  # dataset folders built from this round's runs (relative): the task views' source
    failures: int  # failure samples (j=0) explored this round
    transitions: int  # transitions explored this round (j=0 and j=1)
    train_examples: int  # SFT examples trained on (failures of training pages so far; this round's tasks)
    examples_by_view: dict[str, int] = {}  # of them, per view (actor, qa, selector, predictor), after weights
    heldout: int  # held-out transitions (pages never trained on, all rounds so far)
    floor: Floor | None  # the best know-nothing answer on the held-out transitions; a gain counts only above it
    base: EvalReport | None  # the base model on the held-out transitions
    before: EvalReport | None  # the model in use before this round
    after: EvalReport | None  # this round's adapter
    tasks: PairedSR | None = None  # task success on the dev tasks: the model in use before, this round's adapter
    adopted: bool  # the gate's decision: adopted only above the floor and without regression
    reason: str
    adapter: str | None  # this round's adapter folder (relative); None when nothing was trained
    train: dict | None  # TrainResult.metrics()
    seconds: float  # wall time of the round


class ImproveState(Artifact):
    """The settings of an improve run, its rounds so far and the adapter in use after the last one."""

    FILE = "improve.json"
    SCHEMA = 1

    improve_id: str
    base_model: str
    sites: list[str]
    heldout_share: float
    train_config: TrainConfig
    explore_config: ExploreConfig
    task_eval: TaskEvalConfig | None = None  # the dev tasks rounds are gated on (None: the Predictor alone)
    rounds: list[RoundResult] = []
    adopted_adapter: str | None = None  # relative to the improve run when inside it; None: the base model

    def adopted(self, improve_dir: str | Path) -> Path | None:
        """The adapter folder in use after the last round (None: the base model)."""
        return None if self.adopted_adapter is None else Path(improve_dir) / self.adopted_adapter


def new_improve_id() -> str:
    """A sortable unique improve-run id."""
    return time.strftime("%Y%m%d-%H%M%S") + f"-improve-{uuid.uuid4().hex[:6]}"
