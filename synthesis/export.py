"""Export: a DatasetDict (one split per task type) with Image features, written with save_to_disk and as
self-contained parquet files, plus the dataset card (README.md) and stats.json.

One split per task type, not a `task_type` column: the three types have different columns (a screenshot vs a
list of per-step screenshots, an action vs question/answer), so one table would be mostly nulls. Every split
still carries `task_type`, `messages` and `lineage`, so they concatenate into one SFT mix on those columns.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from datasets import Dataset, DatasetDict
from explorer.errors import ScalehopError
from synthesis.records import TASK_TYPES, Task
from synthesis.resources import datasets_dir
from synthesis.rows import Blob, features, to_row


class PushError(ScalehopError):
    """push_to_hub failed (offline, no token, no access); the dataset stays on disk."""


def to_dataset_dict(tasks: list[Task], blobs: dict[int, Blob], task_types: list[str]) -> DatasetDict:
    """The DatasetDict of the kept tasks: a split per task type of the recipe (empty ones included)."""
    splits = {}
    for task_type in (t for t in TASK_TYPES if t in task_types):
        rows = [to_row(t, blobs[t.source]) for t in tasks if t.task_type == task_type]
        feats = features(task_type)
        splits[task_type] = (
            Dataset.from_list(rows, features=feats)
            if rows
            else Dataset.from_dict({k: [] for k in feats}, features=feats)
        )
    return DatasetDict(splits)


def write_data(dd: DatasetDict, out: Path) -> None:
    """hf/ (save_to_disk) and parquet/<split>.parquet (image bytes embedded)."""
    empty = {split: 1 for split, ds in dd.items() if len(ds) == 0}  # else load_from_disk fails on a shardless split
    dd.save_to_disk(str(out / "hf"), num_shards=empty or None)
    (out / "parquet").mkdir(parents=True, exist_ok=True)
    for split, ds in dd.items():
        ds.to_parquet(str(out / "parquet" / f"{split}.parquet"))


def write_card(out: Path, splits: list[str], stats: dict) -> None:
    """README.md (the dataset card) and stats.json."""
    (out / "README.md").write_text(render_card(splits, stats))
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")


def render_card(splits: list[str], stats: dict) -> str:
    """The dataset card from `datasets/card.md.j2`."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    card = env.from_string((datasets_dir() / "card.md.j2").read_text(encoding="utf-8"))
    return card.render(splits=splits, name=f"scalehop dataset ({stats['recipe']})", **stats)


def push(dd: DatasetDict, repo_id: str, out: Path) -> None:
    """Push to the Hub as one config per task type (split `train`), as the card's `configs` describe; needs network
    and a token. A failure names the repo and the cause."""
    try:
        for split, ds in dd.items():
            ds.push_to_hub(repo_id, config_name=split, split="train")
    except Exception as exc:  # noqa: BLE001 - huggingface_hub raises many kinds; all mean "not pushed"
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise PushError(f"push_to_hub {repo_id} failed ({first}); the dataset is on disk at {out}") from None
