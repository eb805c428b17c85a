"""Budgets of a run: hops, steps, wall time and model tokens. Reaching any of them stops the run cleanly."""

from __future__ import annotations

import time

from explorer.config import ExploreConfig
from explorer.models import ChatModel
from explorer.tracker import StateTracker


class Budget:
    """Tracks what a run has spent; `exhausted()` names the first budget used up, or None."""

    def __init__(self, cfg: ExploreConfig, tracker: StateTracker, model: ChatModel | None = None):
        self.cfg = cfg
        self.tracker = tracker
        self.model = model
        self.started = time.monotonic()
        self.hops = 0
        self.stopped: str | None = None  # set by stop(), e.g. on Ctrl-C
        self._tokens_at_start = self._model_tokens()
        # the model's totals now: it may be shared with other runs, so this run's share is the difference
        self.model_at_start = model.usage_report().get("total", {}) if model is not None else {}

    def tokens(self) -> int:
        """Model tokens in and out since this budget started (the model may be shared with other runs)."""
        return self._model_tokens() - self._tokens_at_start

    def _model_tokens(self) -> int:
        if self.model is None:
            return 0
        total = self.model.usage_report().get("total", {})
        return int(total.get("prompt_tokens", 0) + total.get("completion_tokens", 0))

    def seconds(self) -> float:
        """Wall time since the run (or its resumption) started."""
        return time.monotonic() - self.started

    def stop(self, reason: str) -> None:
        """Ask every worker to stop at its next check."""
        self.stopped = self.stopped or reason

    def exhausted(self) -> str | None:
        """The budget that is used up ("steps", "hops", "seconds", "tokens", "site down: ...", or a stop reason),
        else None."""
        cfg = self.cfg
        if self.stopped:
            return self.stopped
        if cfg.max_steps is not None and self.tracker.next_step >= cfg.max_steps:
            return "steps"
        if self.hops >= cfg.hops:
            return "hops"
        if cfg.max_seconds is not None and self.seconds() >= cfg.max_seconds:
            return "seconds"
        if cfg.max_tokens is not None and self.tokens() >= cfg.max_tokens:
            return "tokens"
        if self.tracker.unreachable_streak >= cfg.max_failed_steps:
            return f"site down: {self.tracker.unreachable_streak} steps in a row could not reach it"
        return None
