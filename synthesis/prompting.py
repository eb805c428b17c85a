"""Prompt files of the dataset stage (package data in `synthesis/prompts/`): a system part, then optionally a
`---` line and a user template."""

from __future__ import annotations

from functools import cache
from importlib import resources

from explorer.models import Message


@cache
def template(name: str) -> tuple[str, str]:
    """(system text, user template) of `synthesis/prompts/<name>.md`."""
    text = (resources.files("synthesis") / "prompts" / f"{name}.md").read_text()
    system, _, user = text.partition("\n---\n")
    return system.strip(), user.strip()


def prompt(name: str, prefill: str, **fields: str) -> list[Message]:
    """The messages of one generator prompt, ending in an assistant `prefill` that the model continues."""
    system, user = template(name)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.format(**fields)},
        {"role": "assistant", "content": prefill},
    ]
