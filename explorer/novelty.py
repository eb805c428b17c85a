"""Novelty of elements: how often an element of the same kind (role + name) was tried in the run.

The Selector shows the model the rarest candidates first; the novelty-greedy baseline simply takes the rarest.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from explorer.records import Element


def signature(el: Element) -> str:
    """What makes two elements "the same kind" across pages: role and digit-folded name."""
    return f"{el.role}:{re.sub(r'[0-9]+', '#', el.name.lower())}"


def rank_candidates(elements: list[Element], tried_kinds: Counter, rng: random.Random) -> list[Element]:
    """Rarest kind first (ties in random order)."""
    shuffled = list(elements)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda el: tried_kinds[signature(el)])
