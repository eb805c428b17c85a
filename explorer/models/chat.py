"""OpenAI chat messages on the wire: images as data-URL parts on the last user message, and back."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from explorer.models.base import Message

_PNG_PREFIX = "data:image/png;base64,"


def to_openai_messages(messages: Sequence[Message], images: Sequence[bytes] | None) -> list[dict[str, Any]]:
    """The request's `messages`: plain ones, with any PNGs as `image_url` parts of the last user message."""
    out: list[dict[str, Any]] = [dict(m) for m in messages]
    if not images:
        return out
    last_user = max((i for i, m in enumerate(out) if m["role"] == "user"), default=None)
    if last_user is None:
        raise ValueError("images need a user message to attach to")
    parts: list[dict[str, Any]] = [{"type": "text", "text": out[last_user]["content"]}]
    parts += [{"type": "image_url", "image_url": {"url": png_data_url(png)}} for png in images]
    out[last_user]["content"] = parts
    return out


def png_data_url(png: bytes) -> str:
    """A PNG as a base64 data URL, the form OpenAI-compatible servers accept in `image_url` parts."""
    return _PNG_PREFIX + base64.b64encode(png).decode()


def from_openai_messages(messages: Sequence[dict[str, Any]]) -> tuple[list[Message], list[bytes]]:
    """Plain messages (text parts joined by newlines) and the decoded images, in order; ValueError if unreadable."""
    plain: list[Message] = []
    images: list[bytes] = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, str):
            plain.append({"role": m["role"], "content": content})
            continue
        texts = []
        for part in content:
            if part.get("type") == "text":
                texts.append(part.get("text", ""))
            elif part.get("type") == "image_url":
                images.append(decode_data_url(part.get("image_url", {}).get("url", "")))
            else:
                raise ValueError(f"unsupported content part type {part.get('type')!r}")
        plain.append({"role": m["role"], "content": "\n".join(texts)})
    return plain, images


def decode_data_url(url: str) -> bytes:
    """The bytes of a base64 `data:image/...` URL; ValueError for anything else (no fetching: we run offline)."""
    head, _, payload = url.partition(",")
    if not (head.startswith("data:image/") and head.endswith(";base64")):
        raise ValueError(f"only base64 data:image URLs are accepted, got {url[:40]!r}")
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"bad base64 in image data URL: {exc}") from None
