"""Usage accounting shared by the backends: tokens and latency per role, safe to call from many threads."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from explorer.models.base import Usage

TOTAL = "total"
UNNAMED_ROLE = "other"


class UsageMeter:
    """Sums calls, tokens and latency per role. A request is one model call or one batch of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roles: dict[str, dict[str, float]] = {}

    def record(
        self,
        role: str | None,
        usages: Sequence[Usage],
        seconds: float,
        *,
        prefill: float = 0.0,
        decode: float = 0.0,
        cached_tokens: int = 0,
        requests: int = 1,
    ) -> None:
        """Account one request of `seconds` wall time that produced these generations; where the backend knows,
        the seconds spent reading the prompt (`prefill`) and writing the answer (`decode`), and the prompt tokens
        it did not have to read (`cached_tokens`: a reused prefix). `requests` 0: part of a request already
        counted (a row of a continuous batch that joined with others)."""
        with self._lock:
            row = self._roles.setdefault(role or UNNAMED_ROLE, dict.fromkeys(_FIELDS, 0))
            row["calls"] += len(usages)
            row["requests"] += requests
            row["prompt_tokens"] += sum(u.prompt_tokens for u in usages)
            row["completion_tokens"] += sum(u.completion_tokens for u in usages)
            row["seconds"] += seconds
            row["prefill_seconds"] += prefill
            row["decode_seconds"] += decode
            row["cached_tokens"] += cached_tokens

    def report(self) -> dict[str, dict[str, float]]:
        """role -> calls, requests, prompt/completion/cached tokens, seconds (prefill and decode seconds where
        known) and mean_latency_s; plus a "total" row."""
        with self._lock:
            rows = {role: dict(row) for role, row in self._roles.items()}
        rows[TOTAL] = {f: sum(row[f] for row in rows.values()) for f in _FIELDS}
        for row in rows.values():
            row["mean_latency_s"] = row["seconds"] / row["requests"] if row["requests"] else 0.0
        return rows


_FIELDS = (
    "calls",
    "requests",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "seconds",
    "prefill_seconds",
    "decode_seconds",
)
