"""Scrubbing of secrets and PII in every text field of a task: a site's login secrets, the values of any ${ENV}
references in its config (and of variables a recipe names), e-mail addresses and phone numbers."""

from __future__ import annotations

import re
from collections import Counter

from explorer.secrets import MIN_SECRET_LEN, site_secrets
from synthesis.records import Task

__all__ = ["EMAIL", "MIN_SECRET_LEN", "PHONE", "Scrubber", "site_secrets"]

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
# +CC groups, or (NNN) NNN-NNNN / NNN-NNN-NNNN / NNN NNN NNNN: separators required, so prices, ids and
# digests never match
PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)|\d{1,4})(?:[\s.-]\d{2,4}){2,4}"
    r"|(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4})(?!\w)"
)
_KEEP = frozenset({"id", "screenshot", "som_screenshot", "goal_screenshot", "element_key", "node_id", "lineage"})


class Scrubber:
    """Replaces secrets with [SECRET], e-mails with [EMAIL] and phone numbers with [PHONE]; counts each."""

    def __init__(self, secrets: list[str]):
        self.secrets = secrets
        self.counts: Counter = Counter()

    def text(self, value: str) -> str:
        """One text with every secret and PII match replaced."""
        for secret in self.secrets:
            if secret in value:
                self.counts["secret"] += value.count(secret)
                value = value.replace(secret, "[SECRET]")
        value, n = EMAIL.subn("[EMAIL]", value)
        self.counts["email"] += n
        value, n = PHONE.subn("[PHONE]", value)
        self.counts["phone"] += n
        return value

    def task(self, task: Task) -> Task:
        """The task with every text field scrubbed (ids, digests, keys and lineage left as they are)."""
        data = task.model_dump()
        return type(task).model_validate({**self._walk(data), "source": task.source})

    def _walk(self, value: object, key: str = "") -> object:
        if key in _KEEP:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._walk(v, k) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._walk(v) for v in value)
        return value
