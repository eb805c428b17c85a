"""Prompt templates, stored as package data: a system part, a `---` line, and a user template."""

from __future__ import annotations

from functools import cache
from importlib import resources

from explorer.models import Message


@cache
def template(role: str) -> tuple[str, str]:
    """(system text, user template) of a role's prompt file."""
    text = (resources.files("explorer.roles") / "prompts" / f"{role}.md").read_text()
    system, _, user = text.partition("\n---\n")
    return system.strip(), user.strip()


def messages(role: str, **fields: str) -> list[Message]:
    """The chat messages of a role with its fields filled in."""
    system, user = template(role)
    return [{"role": "system", "content": system}, {"role": "user", "content": user.format(**fields)}]


def prefill(text: str) -> Message:
    """A final assistant message that starts the answer: the model continues it, keeping the format."""
    return {"role": "assistant", "content": text}
