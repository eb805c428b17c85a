"""The transition memory: what each kind of action did when it was last taken in this run.

The Predictor is shown it as a hint ("Seen before: ..."), so that what the run has already observed counts as
understood (a right prediction, j=1) and the cognitive boundary is what is really new: a small model copies a
relevant earlier outcome well, but cannot guess an unseen one. Keys fold digits, so "Like · 11" and "Like · 12"
are one kind of action.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from explorer.records import Action, Transition
from explorer.rows import RecordRow

MAX_HINT_CHARS = 240


def action_kind(action: Action) -> str:
    """The kind of an action: its verb and its target's role and digit-folded name."""
    return f"{action.kind}:{re.sub(r'[0-9]+', '#', action.label.lower())}"


class TransitionMemory:
    """action kind -> the latest "<action> -> <what happened>" line of this run."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def hint(self, action: Action) -> str | None:
        """What an action of this kind did before in this run, or None when it is new."""
        return self._seen.get(action_kind(action)) if action.label else None

    def remember(self, action: Action, transition: Transition) -> None:
        """Note what `action` just did."""
        if action.label:
            self._seen[action_kind(action)] = f"{action.describe()} -> {transition.description}"[:MAX_HINT_CHARS]

    @classmethod
    def from_records(cls, records: Iterable[RecordRow]) -> TransitionMemory:
        """The memory of a resumed run, rebuilt from its stored ExploreRecords (in step order)."""
        memory = cls()
        for row in records:
            payload = row.payload
            memory.remember(Action.model_validate(payload["action"]), Transition.model_validate(payload["transition"]))
        return memory
