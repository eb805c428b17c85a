"""Command-line options generated from the typed configs (as TRL's parser does): one flag per config field, its
help the field's description and its default the config's, so every default lives in one place."""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Mapping

from pydantic import BaseModel

from explorer.config import validated


def _scalar(annotation: object) -> object:
    """`int` for `int | None`, the annotation itself otherwise."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


def add_config_options(
    p: argparse.ArgumentParser,
    config: type[BaseModel],
    flags: Mapping[str, str],
    defaults: Mapping[str, object] | None = None,
) -> None:
    """Add `--flag` for each `field -> flag` of `flags`; an option not given leaves the config's default, or the
    verb's own one in `defaults` (e.g. a finite step budget where the config has none)."""
    own = dict(defaults or {})
    for name, flag in flags.items():
        field = config.model_fields[name]
        kind = _scalar(field.annotation)
        text = f"{field.description or name} (default: {own.get(name, field.default)})"
        default = own.get(name)
        if kind is bool:
            p.add_argument(f"--{flag}", dest=name, action=argparse.BooleanOptionalAction, default=default, help=text)
        elif typing.get_origin(kind) is typing.Literal:
            p.add_argument(f"--{flag}", dest=name, choices=typing.get_args(kind), default=default, help=text)
        else:
            p.add_argument(f"--{flag}", dest=name, type=kind, default=default, metavar=flag.upper(), help=text)


def config_from_args(
    config: type[BaseModel],
    args: argparse.Namespace,
    flags: Mapping[str, str],
    base: BaseModel | None = None,
    **fixed: object,
):
    """The config from the options `add_config_options` added and `fixed`; those not given keep `base`'s values
    (e.g. a resumed run's own config) or, without one, the config's defaults."""
    given = {name: getattr(args, name) for name in flags if getattr(args, name, None) is not None}
    kept = base.model_dump(exclude_unset=True) if base is not None else {}
    return validated(lambda: config(**(kept | given | fixed)), f"{config.__name__} options")
