"""TrainConfig: one typed config for a LoRA round (adapter shape, optimisation, data views, hardware flags).

It loads from a TOML file (`TrainConfig.load`), takes overrides, and is checked when built: a bad field names
itself and its value. On GPU set `bf16` and `gradient_checkpointing`; for several GPUs launch the same command
under `accelerate launch` (or `torchrun`): the HF Trainer picks the processes up from the environment, so no
code changes (see training/train.py).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from explorer.config import validated
from explorer.errors import ConfigError

_EMPTY = {
    "target_modules": "name at least one module to adapt, e.g. ['q_proj', 'v_proj']",
    "tasks": "train at least one role: 'selector' and/or 'predictor' (the Judger is never trained)",
}


class TrainConfig(BaseModel):
    """A LoRA fine-tune of the exploring model on SFT views of failure samples."""

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
    max_length: int = Field(640, gt=16)  # prompt + completion tokens; longer examples lose prompt tokens first
    seed: int = 0
    # the roles the adapter learns: both (one multi-task adapter, the default) or one of them
    tasks: tuple[Literal["selector", "predictor"], ...] = ("selector", "predictor")
    # hardware (off on CPU; on GPU turn both on)
    bf16: bool = False
    gradient_checkpointing: bool = False
    threads: int | None = Field(None, gt=0)  # CPU threads; None: all this process may use
    save_steps: int = Field(50, gt=0)  # checkpoint every this many optimizer steps (resumable)

    @field_validator("target_modules", "tasks")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...], info) -> tuple[str, ...]:
        if not value:
            raise ValueError(_EMPTY[info.field_name])
        return value

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: object) -> TrainConfig:
        """A config from a TOML file (optional) with overrides on top; errors name the file and the field."""
        data: dict = {}
        if path is not None:
            file = Path(path)
            if not file.is_file():
                raise ConfigError(f"{file}: no such train config (give a .toml file)")
            try:
                data = tomllib.loads(file.read_text())
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{file}: not valid TOML ({exc})") from None
        data |= {k: v for k, v in overrides.items() if v is not None}
        return validated(lambda: cls(**data), str(path) if path else "train options")
