"""The Actor's shortlist: which of a page's elements it is shown for a task, and in which order (after MindAct's
candidate ranking).

A page often has more elements than the Actor's prompt lists (`MAX_SHOWN`); the first ones in page order are the
header and navigation, so a task's target further down was never shown. The shortlist keeps the `k` element lines
whose text (without the mark) is closest to the task's intent by cosine of MiniLM embeddings, closest first. The
order matters to a small model, which leans on the first lines: on the first 8 `dev` tasks of each bundled site
the embedded Actor completed 0, 0, 0 with the first 15 elements in page order, 1, 0, 0 with the shortlist in page
order and 3, 1, 2 with it closest first (README). The `ranker` policy (`evals.policies`: the first line's action,
no model) completed 3, 2, 2: the ranking does that work, and it is the floor a model has to beat. The live Actor
(`actor.act`) and the training and few-shot views built from datasets (`evals.shots.demo_prompt`) shortlist
alike; a dataset's acted-on line takes the last place when the ranking leaves it out (`keep`), so no training
example shows a line the ranking would not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import numpy as np

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> one L2-normalized row per text
CACHED = 50_000  # texts whose embedding is kept
_MARK = re.compile(r"^\[\d+\]\s*")


def shortlist(
    intent: str, lines: Sequence[str], k: int, embed: Embed | None = None, keep: int | None = None
) -> list[int]:
    """Indices of the `k` lines closest to `intent`, closest first (ties: page order); `keep`: an index that must
    be among them (it takes the last place, the least close one's)."""
    ranked = closest(intent, lines, embed)[:k]
    if keep is not None and keep not in ranked:
        ranked[-1] = keep
    return ranked


def closest(intent: str, lines: Sequence[str], embed: Embed | None = None) -> list[int]:
    """Every line's index, closest to `intent` first (cosine of the embeddings of the line without its mark)."""
    if len(lines) < 2:
        return list(range(len(lines)))
    vectors = (embed or default_embed())([intent, *(_MARK.sub("", line) for line in lines)])
    scores = vectors[1:] @ vectors[0]
    return sorted(range(len(lines)), key=lambda i: (-float(scores[i]), i))


@functools.cache
def default_embed() -> Embed:
    """MiniLM's `embed` (`explorer.models.Embedder`), loaded once per process, with each text's row cached."""
    from explorer.models import Embedder

    embedder = Embedder()
    cache: dict[str, np.ndarray] = {}

    def embed(texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        if len(cache) + len(new) > CACHED:
            cache.clear()
        if new:
            cache.update(zip(new, embedder.embed(new), strict=True))
        return np.stack([cache[t] for t in texts])

    return embed
