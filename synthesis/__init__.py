"""Reverse construction: datasets of single-step tasks, multi-step tasks and page QA built from exploration runs.

`build_dataset(run_dirs, recipe, out)` is the entry point (the CLI and the flows call it). Names load on first
use, so importing the package (as the CLI does) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synthesis.build import BuildResult, build_dataset
    from synthesis.recipe import DatasetRecipe, Gates, load_recipe
    from synthesis.records import Lineage, MultiStepTask, PageQA, SingleStepTask

_LAZY = {
    "BuildResult": "synthesis.build",
    "build_dataset": "synthesis.build",
    "DatasetRecipe": "synthesis.recipe",
    "Gates": "synthesis.recipe",
    "load_recipe": "synthesis.recipe",
    "Lineage": "synthesis.records",
    "MultiStepTask": "synthesis.records",
    "PageQA": "synthesis.records",
    "SingleStepTask": "synthesis.records",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BuildResult",
    "DatasetRecipe",
    "Gates",
    "Lineage",
    "MultiStepTask",
    "PageQA",
    "SingleStepTask",
    "build_dataset",
    "load_recipe",
]
