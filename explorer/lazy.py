"""Lazy package exports: a package's `__getattr__` that imports an exported name's module on first use, so
importing the package (or one of its light modules) does not load the heavy ones."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """The `__getattr__` of `package`: name -> `getattr(import_module(exports[name]), name)`."""

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    return __getattr__
