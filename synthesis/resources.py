"""Where the dataset stage's declarative files are: recipes, row schemas and the card template.

They live in the repository's top-level `datasets/` folder. An installed wheel cannot ship that folder under its own
name (`site-packages/datasets` is the Hugging Face library), so the wheel carries it as package data of `synthesis`
at `synthesis/_datasets/` (in the repository, `synthesis/_datasets` is a link to `../datasets`). Read them through
`importlib.resources` (`read_text`, `iterdir`, `is_file`), never through a path built from `__file__`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from explorer.errors import ConfigError

BUNDLED = "_datasets"  # the folder's name inside the `synthesis` package


@cache
def datasets_dir() -> Traversable:
    """The declarative datasets folder: `synthesis/_datasets` (a wheel, or the repository's link), else the
    repository's top-level `datasets/` (a checkout where the link is not one, e.g. git without symlinks)."""
    package = resources.files("synthesis")
    for candidate in (package / BUNDLED, package / ".." / "datasets"):
        if (candidate / "recipes").is_dir():  # ours: Hugging Face's `datasets` package has no recipes/
            return candidate
    raise ConfigError(f"the dataset recipes are missing: neither {package / BUNDLED} nor the repository's datasets/")


def recipe_names() -> list[str]:
    """The recipe names under `datasets/recipes/` (their file names without `.toml`), sorted."""
    recipes = datasets_dir() / "recipes"
    return sorted(p.name.removesuffix(".toml") for p in recipes.iterdir() if p.name.endswith(".toml"))
