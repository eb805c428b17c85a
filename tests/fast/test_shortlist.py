"""The Actor's shortlist (`explorer.roles.shortlist`): the k element lines closest to the intent, closest first,
with a kept line; and the ranker floor (`evals.policies.RankerPolicy`), which acts on the first of them. The
embedding is a deterministic fake (word counts over a few words), which makes the ranking computable by hand and
keeps this tier free of model weights; tests/test_actor.py runs the real MiniLM."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evals.policies import RankerPolicy
from explorer.records import Action, Observation
from explorer.roles.shortlist import shortlist
from tests.fast.conftest import element

WORDS = ("kitchen", "tent", "boot", "cart")


def embed(texts: Sequence[str]) -> np.ndarray:
    """Word counts over WORDS, L2-normalized (a row of zeros stays zero)."""
    rows = np.array([[t.lower().count(w) for w in WORDS] for t in texts], dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def observation(elements) -> Observation:
    """A page holding `elements`."""
    return Observation(
        url="http://shop.test/",
        title="Shop",
        elements=elements,
        screenshot=b"",
        som_screenshot=b"",
        text="",
        viewport=(1, 1),
    )


LINES = [f'[{i}] link "Item {i}"' for i in range(1, 31)]
LINES[24] = '[25] link "Camp Kitchen"'
LINES[27] = '[28] link "Kitchen tent"'


def test_the_closest_lines_come_first_then_page_order():
    assert shortlist("Open the camp kitchen", LINES, 3, embed) == [24, 27, 0]  # "Kitchen tent" shares one word
    assert shortlist("Open the camp kitchen", LINES[:3], 15, embed) == [0, 1, 2]  # no line is closer: page order


def test_the_mark_does_not_count_toward_closeness():
    lines = ['[1] link "Boot"', '[2] link "Cart"', '[3] link "Tent"']
    assert shortlist("tent", lines, 1, embed) == [2]


def test_a_kept_line_takes_the_last_place():
    assert shortlist("Open the camp kitchen", LINES, 3, embed, keep=9) == [24, 27, 9]
    assert shortlist("Open the camp kitchen", LINES, 3, embed, keep=27) == [24, 27, 0]


async def test_the_ranker_acts_on_the_closest_usable_element():
    page = [element(1, "link", "Boots"), element(2, "textbox", "Search the tents"), element(3, "link", "Cart")]
    obs = observation(page)
    tent = await RankerPolicy(embed=embed).decide("find a tent", obs, [])
    assert tent.action.kind == "type" and tent.action.mark == 2 and tent.system == "ranker"
    assert (await RankerPolicy(embed=embed).decide("my cart", obs, [])).action == Action.on(page[2], "click")
    assert (await RankerPolicy(embed=embed).decide("my cart", observation([]), [])).action.kind == "stop"
