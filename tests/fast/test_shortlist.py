"""The Actor's shortlist (`explorer.roles.shortlist`): the k element lines closest to the intent, in page order,
with a kept line. The embedding is a deterministic fake (word counts over a few words), which makes the ranking
computable by hand and keeps this tier free of model weights; tests/test_actor.py runs the real MiniLM."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from explorer.roles.shortlist import shortlist

WORDS = ("kitchen", "tent", "boot", "cart")


def embed(texts: Sequence[str]) -> np.ndarray:
    """Word counts over WORDS, L2-normalized (a row of zeros stays zero)."""
    rows = np.array([[t.lower().count(w) for w in WORDS] for t in texts], dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


LINES = [f'[{i}] link "Item {i}"' for i in range(1, 31)]
LINES[24] = '[25] link "Camp Kitchen"'
LINES[27] = '[28] link "Kitchen tent"'


def test_a_short_page_is_shown_whole_in_page_order():
    assert shortlist("Open Camp Kitchen", LINES[:10], 15, embed) == list(range(10))


def test_the_closest_lines_are_kept_in_page_order():
    picked = shortlist("Open the camp kitchen", LINES, 3, embed)
    assert 24 in picked and 27 in picked and picked == sorted(picked) and len(picked) == 3
    assert picked[0] == 0  # the rest of the ties: page order


def test_the_mark_does_not_count_toward_closeness():
    lines = ['[1] link "Boot"', '[2] link "Cart"', '[3] link "Tent"']
    assert shortlist("tent", lines, 1, embed) == [2]


def test_a_kept_line_replaces_the_least_close():
    picked = shortlist("Open the camp kitchen", LINES, 3, embed, keep=9)
    assert 9 in picked and 24 in picked and len(picked) == 3
