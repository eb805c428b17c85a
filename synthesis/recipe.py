"""`DatasetRecipe`: the typed config of a dataset build, loaded from `datasets/recipes/<name>.toml` or any TOML file."""

from __future__ import annotations

import tomllib
from importlib.resources.abc import Traversable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.config import validated
from explorer.errors import ConfigError
from explorer.models import ModelConfig
from synthesis.records import TASK_TYPES, GeneratorName, TaskType
from synthesis.resources import datasets_dir, recipe_names


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Gates(_Strict):
    """Quality gates every task passes before it enters the dataset."""

    replay: bool = True  # re-run each multi-step task in a fresh browser; keep it only if it reaches its target
    delta: float | None = Field(None, gt=0, le=1)  # SSIM threshold of "reached"; None: the run's own delta
    dedup_jaccard: float = Field(0.9, gt=0, le=1)  # word-set overlap at which two texts count as near-identical
    min_words: int = Field(3, ge=1)  # instruction / question length bounds
    max_words: int = Field(60, ge=1)
    max_chars: int = Field(20_000, gt=0)  # any one text field (observation text included)
    scrub_env: list[str] = Field(default_factory=list)  # more environment variables whose values are secrets

    @model_validator(mode="after")
    def _bounds(self) -> Gates:
        if self.min_words > self.max_words:
            raise ValueError(f"min_words ({self.min_words}) exceeds max_words ({self.max_words})")
        return self


class DatasetRecipe(_Strict):
    """Which tasks to build from which records, with which generator, through which gates."""

    name: str = "default"
    task_types: list[TaskType] = Field(default_factory=lambda: list(TASK_TYPES))
    generator: GeneratorName = "template"
    model: ModelConfig = Field(default_factory=ModelConfig)  # used by the `model` generator only
    include_understood: bool = False  # single-step tasks from j=1 records too (default: failure samples only)
    answer_tasks: bool = True  # each task whose goal page states a fact once more, asking for it (synthesis.answers)
    min_path: int = Field(2, ge=1)  # actions in a multi-step task
    max_path: int = Field(6, ge=1)
    limit: int | None = Field(None, gt=0)  # most drafts per task type and run (quick builds)
    gates: Gates = Field(default_factory=Gates)
    push_to_hub: str | None = None  # a Hub repo id: push after the build (needs network and a token)

    @model_validator(mode="after")
    def _path_bounds(self) -> DatasetRecipe:
        if self.min_path > self.max_path:
            raise ValueError(f"min_path ({self.min_path}) exceeds max_path ({self.max_path})")
        return self


def load_recipe(target: str | Path | None = None, **overrides: object) -> DatasetRecipe:
    """A recipe from a TOML path or a name under datasets/recipes/ (None: the default recipe)."""
    if target is None:
        return validated(lambda: DatasetRecipe(**overrides), "recipe")
    source = recipe_file(target)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{source}: cannot parse: {str(exc).splitlines()[0]}") from None
    data.setdefault("name", Path(source.name).stem)
    return validated(lambda: DatasetRecipe(**{**data, **overrides}), str(source))


def recipe_file(target: str | Path) -> Path | Traversable:
    """The recipe file `target` names: a TOML file path, else a recipe name under datasets/recipes/."""
    path = Path(target)
    if path.is_file():
        return path
    named = datasets_dir() / "recipes" / f"{target}.toml"
    if named.is_file():
        return named
    raise ConfigError(f"{target}: no such recipe file or recipe name (known: {', '.join(recipe_names())})")
