"""TrainConfig: one typed config for a LoRA round (adapter shape, optimisation, data views, hardware flags).

It loads from a YAML or TOML file (`TrainConfig.load`), in TRL's CLI style: the file over the defaults, flags
over the file. It is checked when built: a bad field names itself and its value. On GPU set `bf16` and
`gradient_checkpointing`; for several GPUs launch the same command under `accelerate launch` (or `torchrun`):
the Trainer picks the processes up from the environment, so no code changes (see training/train.py).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from explorer.config import validated
from explorer.errors import ConfigError
from explorer.records import ActionKind

_EMPTY = {
    "target_modules": "name at least one module to adapt, e.g. ['q_proj', 'v_proj']",
    "views": "train at least one view: actor, qa, selector or predictor (the Judger is never trained)",
}
View = Literal["actor", "qa", "selector", "predictor"]


class TrainConfig(BaseModel):
    """A LoRA fine-tune of the model on SFT views: the Actor on dataset tasks, the Selector and Predictor on
    failure samples (see training/views.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_model: str = "smollm2-135m"  # the embedded alias or an HF model path
    # adapter shape
    rank: int = Field(16, gt=0)
    alpha: int = Field(32, gt=0)
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    # optimisation
    lr: float = Field(1e-3, gt=0)
    epochs: float = Field(2.0, gt=0)
    max_steps: int | None = Field(None, gt=0)  # optimizer steps; overrides epochs when set
    batch_size: int = Field(4, gt=0)
    grad_accum: int = Field(1, gt=0)
    warmup_steps: float = Field(0.0, ge=0)  # optimizer steps, or a share of all steps when below 1
    weight_decay: float = Field(0.0, ge=0)
    max_length: int = Field(1024, gt=16)  # prompt + completion tokens; a longer example is skipped (counted)
    seed: int = 0
    # the views the adapter learns (one multi-task adapter), and how often each one's examples are seen
    views: tuple[View, ...] = ("actor", "selector", "predictor")
    weights: dict[View, float] = {}  # view -> repeats of its examples (default 1; 0.5: a seeded half)
    # Actor examples (actor and qa views) repeated by the action they demonstrate, on top of their view's weight:
    # `click`, `type`, `select`, `stop` (a plain stop), `answer` (a stop with an answer: every qa example), ...
    # (default 1), so that rare actions can be seen as often as clicks
    action_weights: dict[ActionKind | Literal["answer"], float] = {}
    # hardware (off on CPU; on GPU turn both on)
    bf16: bool = False
    gradient_checkpointing: bool = False
    threads: int | None = Field(None, gt=0)  # CPU threads; None: all this process may use
    save_steps: int = Field(50, gt=0)  # checkpoint every this many optimizer steps (resumable)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: object) -> object:
        """Configs written before views existed name the failure views `tasks`."""
        if isinstance(data, dict) and "tasks" in data and "views" not in data:
            data = {**data, "views": data["tasks"]}
            del data["tasks"]
        return data

    @field_validator("weights", "action_weights")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: w for k, w in value.items() if not (math.isfinite(w) and w >= 0)}
        if bad:
            raise ValueError(f"weights must be finite and >= 0, got {bad}")
        return value

    @field_validator("target_modules", "views")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...], info) -> tuple[str, ...]:
        if not value:
            raise ValueError(_EMPTY[info.field_name])
        return value

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: object) -> TrainConfig:
        """A config from a YAML or TOML file (optional) with overrides on top; errors name the file and the field."""
        data: dict = {}
        if path is not None:
            file = Path(path)
            if not file.is_file():
                raise ConfigError(f"{file}: no such train config (give a .yaml or .toml file)")
            try:
                data = _read(file)
            except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ConfigError(f"{file}: not valid {file.suffix.lstrip('.').upper()} ({first})") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{file}: a train config is a mapping of fields (see training/config.py)")
        data |= {k: v for k, v in overrides.items() if v is not None}
        return validated(lambda: cls(**data), str(path) if path else "train options")


def _read(file: Path) -> object:
    """The file's data: YAML for .yaml/.yml, TOML otherwise."""
    text = file.read_text()
    if file.suffix in (".yaml", ".yml"):
        return yaml.safe_load(text) or {}
    return tomllib.loads(text)
