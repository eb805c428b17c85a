"""Reuse of the KV cache of a shared prompt prefix on the local backend (automatic prefix caching, as vLLM does it).

The roles' calls at one observation start alike: the Predictor's kind is scored over its prompt, then the rest of
the answer is generated from the same prompt plus the kind; the N verification predictions share the page context;
a repair repeats the first prompt. `PrefixCache` keeps the keys and values of recent prompts (per adapter: a LoRA
on the attention changes them) and hands a call the longest cached prefix of its tokens, so only the new tokens
are prefilled. A batch shares one prefix: rows are laid out as [prefix][padding][own suffix] with the padding
masked, and positions follow the attention mask, so each row reads exactly what it would read alone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache

MIN_TOKENS = 16  # shorter shared prefixes are not worth a cache lookup
ENTRIES = 8  # prompts kept (a 135M model's 300-token prompt: ~7 MB in float32)


@dataclass(frozen=True)
class Prefix:
    """Cached keys and values of `ids` (batch 1): one (keys, values) pair per layer."""

    ids: tuple[int, ...]
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]


def shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` have in common."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = (torch.tensor(a[:n]) != torch.tensor(b[:n])).nonzero()
    return int(differ[0]) if len(differ) else n


class PrefixCache:
    """The KV caches of recent prompt prefixes, looked up by their tokens; least recently used ones are dropped.
    Thread-safe; the caller holds the model's lock while it runs the model."""

    def __init__(self, config, entries: int = ENTRIES, min_tokens: int = MIN_TOKENS) -> None:
        self.config = config  # the model config: the cache's layer types
        self.entries = entries
        self.min_tokens = min_tokens
        self._lock = threading.Lock()
        self._store: OrderedDict[tuple[object, tuple[int, ...]], Prefix] = OrderedDict()
        self.reused = 0  # prompt tokens not prefilled: read from the cache, or computed once for a whole batch
        self.prefilled = 0  # prompt tokens the model read

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    def clear(self) -> None:
        """Forget every entry (the weights changed: an adapter was loaded or removed)."""
        with self._lock:
            self._store.clear()

    def longest(self, key: object, ids: Sequence[int]) -> tuple[int, Prefix | None]:
        """(n, entry): the cached entry under `key` sharing the most leading tokens with `ids`, and how many."""
        with self._lock:
            best, n = None, 0
            for (k, _), entry in self._store.items():
                if k == key and (m := shared_length(entry.ids, ids)) > n:
                    best, n = entry, m
            if best is not None:
                self._store.move_to_end((key, best.ids))
            return n, best

    def put(self, key: object, ids: Sequence[int], cache: DynamicCache) -> None:
        """Keep the keys and values of `ids` (the first row of `cache`, which holds at least those tokens)."""
        n = len(ids)
        layers = tuple((k[:1, :, :n].clone(), v[:1, :, :n].clone()) for k, v, *_ in cache)
        with self._lock:
            self._store[(key, tuple(ids))] = Prefix(tuple(ids), layers)
            self._store.move_to_end((key, tuple(ids)))
            while len(self._store) > self.entries:
                self._store.popitem(last=False)

    def view(self, entry: Prefix | None, n: int, rows: int) -> DynamicCache:
        """A fresh cache holding the first `n` tokens of `entry` for `rows` rows (the entry itself is not touched:
        a cache grows by concatenation, into new tensors)."""
        if entry is None or n == 0:
            return DynamicCache(config=self.config)
        data = [(k[:, :, :n].expand(rows, -1, -1, -1), v[:, :, :n].expand(rows, -1, -1, -1)) for k, v in entry.layers]
        return DynamicCache(data, config=self.config)

    def prefill(
        self, model, key: object, rows: Sequence[Sequence[int]], limit: int | None = None
    ) -> tuple[int, DynamicCache]:
        """(n, cache): the keys and values of the first n tokens the rows share (at most all but each row's last
        token, which the caller's forward pass needs, and at most `limit`), from the cache where held and computed
        (then kept) where not; the cache is expanded to the rows."""
        common = min(min(len(r) for r in rows) - 1, limit if limit is not None else len(rows[0]))
        for r in rows[1:]:
            common = min(common, shared_length(rows[0], r))
        if common < self.min_tokens:
            return 0, DynamicCache(config=self.config)
        head = list(rows[0][:common])
        n, entry = self.longest(key, head)
        if n < self.min_tokens:
            n, entry = 0, None
        n = min(n, common)
        if n < common:
            cache = self.view(entry, n, 1)
            with torch.inference_mode():
                ids = torch.tensor([head[n:]], device=model.device)
                model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)  # only the cache is wanted
            self.put(key, head, cache)
            _, entry = self.longest(key, head)
        read = (common - n) + sum(len(r) - common for r in rows)  # what the model reads of these prompts
        with self._lock:
            self.prefilled += read
            self.reused += sum(len(r) for r in rows) - read
        return common, self.view(entry, common, len(rows))


def layout(rows: Sequence[Sequence[int]], prefix: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of rows that share their first `prefix` tokens: [prefix][padding][suffix], the
    padding masked (with prefix 0 this is plain left padding)."""
    width = max(len(r) for r in rows) - prefix
    ids = torch.full((len(rows), prefix + width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        suffix = row[prefix:]
        ids[i, :prefix] = torch.tensor(row[:prefix], dtype=torch.long)
        ids[i, prefix + width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
        mask[i, :prefix] = 1
        mask[i, prefix + width - len(suffix) :] = 1
    return ids, mask
