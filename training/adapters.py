"""The adapter registry: `<improve run>/adapters/round-<k>/` is a standard peft LoRA folder (adapter_config.json,
adapter_model.safetensors; vLLM hot-loads it) plus `card.json`.

card.json keys (stable; reports read them):
  round            int, k
  base_model       the base model name the adapter applies to
  parent_round     int | null: the round of the adapter in use when this one's data was explored (null: base)
  data_hash        sha256 of the SFT examples (training.sft.data_hash)
  counts           {train_examples, selector_examples, predictor_examples, failures, transitions, heldout}
  metrics          {before, after}: EvalReport dicts (held-out Predictor accuracy, surprise, ...) of the model in
                   use before this round and of this adapter; plus "train": TrainResult.metrics()
  adopted          bool: the gate's decision
  reason           the gate's reason
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel


class AdapterCard(BaseModel):
    """The JSON card beside each round's adapter."""

    round: int
    base_model: str
    parent_round: int | None
    data_hash: str
    counts: dict[str, int]
    metrics: dict
    adopted: bool
    reason: str


def round_dir(improve_dir: str | Path, k: int) -> Path:
    """`<improve_dir>/adapters/round-<k>`."""
    return Path(improve_dir) / "adapters" / f"round-{k}"


def write_card(folder: str | Path, card: AdapterCard) -> Path:
    """Write `card.json` into an adapter folder."""
    path = Path(folder) / "card.json"
    path.write_text(card.model_dump_json(indent=2))
    return path


def read_card(folder: str | Path) -> AdapterCard:
    """The card of an adapter folder."""
    return AdapterCard.model_validate(json.loads((Path(folder) / "card.json").read_text()))
