"""Novelty of elements: how often an element of the same kind (role + name) was tried in the run.

The Selector shows the model only the rarest tier (a kind never tried in the run is the least understood a
model can be of it; among those, the model picks); the novelty-greedy baseline simply takes the rarest.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from explorer.records import Element


def signature(el: Element) -> str:
    """What makes two elements "the same kind" across pages: role and digit-folded name."""
    return kind_signature(el.role, el.name)


def kind_signature(role: str, name: str) -> str:
    """`signature` of an element known by its role and name (e.g. from an action's label)."""
    return f"{role}:{re.sub(r'[0-9]+', '#', name.lower())}"


def rank_candidates(elements: list[Element], tried_kinds: Counter, rng: random.Random) -> list[Element]:
    """Rarest kind first (ties in random order)."""
    shuffled = list(elements)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda el: tried_kinds[signature(el)])


def rarest_tier(ranked: list[Element], tried_kinds: Counter) -> list[Element]:
    """The head of `ranked` (rarest first) whose kinds were tried as rarely as the first one's."""
    if not ranked:
        return []
    low = tried_kinds[signature(ranked[0])]
    return [el for el in ranked if tried_kinds[signature(el)] == low]
