"""The one way a role asks the model: a prefilled answer written under the role's grammar (constrained decoding,
where the backend enforces it), a parse, one stricter repair, then a recorded fallback."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from explorer.models import ChatModel, Message
from explorer.roles.prompts import prefill
from explorer.roles.stats import RoleStats

T = TypeVar("T")
log = logging.getLogger(__name__)


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
    grammar: str | None = None,
) -> tuple[T | None, str]:
    """(parsed answer or None when even the repair failed, the raw text). The answer starts with `start`; the
    rest of it matches `grammar` where the backend enforces grammars (then it always parses, and a failed parse
    is a bug between the grammar and the parser: logged, then repaired like any other)."""
    stats.count(role, calls=1)
    enforced = grammar is not None and getattr(model, "enforces_grammar", False)

    def generate(conversation: list[Message]) -> str:
        gen = model.generate(
            [*conversation, prefill(start)],
            images,
            max_tokens=max_tokens,
            role=role,
            use_adapter=use_adapter,
            grammar=grammar,
        )
        return start + gen.text

    raw = generate(messages)
    parsed = parse(raw)
    if enforced:
        stats.count(role, constrained=1)
        if parsed is None:
            log.warning("%s: an answer written under the grammar %r did not parse: %r", role, grammar, raw)
    if parsed is None:
        stats.count(role, repairs=1)
        raw = generate([*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": repair}])
        parsed = parse(raw)
    if parsed is None:
        stats.count(role, fallbacks=1)
    return parsed, raw
