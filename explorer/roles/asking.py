"""The one way a role asks the model: a prefilled answer, a parse, one stricter repair, then a recorded fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from explorer.models import ChatModel, Message
from explorer.roles.prompts import prefill
from explorer.roles.stats import RoleStats

T = TypeVar("T")


def ask(
    model: ChatModel,
    role: str,
    messages: list[Message],
    parse: Callable[[str], T | None],
    *,
    start: str,
    repair: str,
    images: list[bytes] | None,
    max_tokens: int,
    stats: RoleStats,
    use_adapter: bool = True,
) -> tuple[T | None, str]:
    """(parsed answer or None when even the repair failed, the raw text). The answer starts with `start`."""
    stats.calls[role] += 1

    def generate(conversation: list[Message]) -> str:
        gen = model.generate(
            [*conversation, prefill(start)], images, max_tokens=max_tokens, role=role, use_adapter=use_adapter
        )
        return start + gen.text

    raw = generate(messages)
    parsed = parse(raw)
    if parsed is None:
        stats.repairs[role] += 1
        raw = generate([*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": repair}])
        parsed = parse(raw)
    if parsed is None:
        stats.fallbacks[role] += 1
    return parsed, raw
