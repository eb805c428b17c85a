"""Records and the one interface every model backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Message = dict[str, str]  # OpenAI style: {"role": "system" | "user" | "assistant", "content": "..."}
FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class Usage:
    """Tokens in and out of one generation, and the wall-clock seconds of the call that produced it."""

    prompt_tokens: int
    completion_tokens: int
    seconds: float


@dataclass(frozen=True)
class Generation:
    """One answer: the text (cut before any stop string), its usage, and why generation ended."""

    text: str
    usage: Usage
    finish_reason: FinishReason


@runtime_checkable
class ChatModel(Protocol):
    """A chat model for the roles. `images` are PNG bytes attached to the last user message; `role` names the
    pipeline role ("selector", "predictor", "judger", ...) for accounting; `use_adapter=False` runs the base
    model with any LoRA adapter disabled; `max_tokens=None` takes the config's default; `grammar` is a regex the
    completion must match (the role's answer format): enforced where `enforces_grammar`, else asked of the server
    (structured outputs), which may ignore it."""

    model_id: str
    adapter_id: str | None
    sees_images: bool  # a vision-language model: the roles attach the Set-of-Mark screenshot
    enforces_grammar: bool  # every completion matches its `grammar` (the local backend); else best effort

    def generate(
        self,
        messages: Sequence[Message],
        images: Sequence[bytes] | None = None,
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        role: str | None = None,
        use_adapter: bool = True,
        grammar: str | None = None,
    ) -> Generation:
        """Answer one conversation."""
        ...

    def generate_batch(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        images: Sequence[Sequence[bytes] | None] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        role: str | None = None,
        use_adapter: bool = True,
        grammar: str | None = None,
    ) -> list[Generation]:
        """Answer several conversations (images: one list per conversation), in order."""
        ...

    def choose(
        self,
        messages: Sequence[Message],
        options: Sequence[str],
        images: Sequence[bytes] | None = None,
        *,
        role: str | None = None,
        use_adapter: bool = True,
    ) -> int | None:
        """The index of the option the model would most likely write next (the conversation may end with an
        assistant prefill that the option continues); None when the model picked none of them."""
        ...

    def usage_report(self) -> dict[str, dict[str, float]]:
        """Per role, and in total: calls, requests, tokens in and out, seconds, mean latency."""
        ...
