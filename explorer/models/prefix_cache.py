"""Reuse of the KV cache of a shared prompt prefix on the local backend (automatic prefix caching, as vLLM does it).

The roles' calls at one observation start alike: the Predictor's kind is scored over its prompt, then the rest of
the answer is generated from the same prompt plus the kind; the N verification predictions share the page context;
a repair repeats the first prompt. `PrefixCache` keeps the keys and values of recent prompts (per adapter: a LoRA
on the attention changes them) and hands a call the longest cached prefix of its tokens, so only the new tokens
are prefilled. Each row of a batch has its own cached prefix (rows of several contexts' or roles' calls, merged by
`batcher.py`, each find their own page), and a prefix the rows share is computed once for all of them (a node's
verification predictions): rows are laid out as [padding][own prefix][padding][own suffix] with the padding masked,
and positions follow the attention mask, so each row reads exactly what it would read alone.
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
        self._keep(key, tuple(ids), tuple((k[:1, :, :n].clone(), v[:1, :, :n].clone()) for k, v, *_ in cache))

    def put_rows(self, key: object, ids: torch.Tensor, mask: torch.Tensor, cache: DynamicCache) -> None:
        """Keep each row of a batch laid out by `layout` (ids, mask) whose keys and values `cache` holds: the
        row's unmasked tokens, the padding between its prefix and suffix taken out."""
        for row in range(ids.shape[0]):
            keep = mask[row].nonzero()[:, 0]
            layers = tuple(
                (k[row : row + 1, :, keep.to(k.device)].clone(), v[row : row + 1, :, keep.to(v.device)].clone())
                for k, v, *_ in cache
            )
            self._keep(key, tuple(ids[row, keep].tolist()), layers)

    def _keep(self, key: object, ids: tuple[int, ...], layers) -> None:
        """Store an entry as the most recent, dropping the least recently used beyond `entries`."""
        with self._lock:
            self._store[(key, ids)] = Prefix(ids, layers)
            self._store.move_to_end((key, ids))
            while len(self._store) > self.entries:
                self._store.popitem(last=False)

    def view(self, entries: Sequence[tuple[int, Prefix | None]]) -> DynamicCache:
        """A fresh cache holding, for each row, the first n tokens of its entry, left-padded to the longest (the
        entries themselves are not touched: a cache grows by concatenation, into new tensors)."""
        width = max((n for n, _ in entries), default=0)
        if width == 0:
            return DynamicCache(config=self.config)
        n0, first = entries[0]
        if all(n == n0 and e is first for n, e in entries):  # one prefix for every row: a view, no copy
            data = [
                (k[:, :, :n0].expand(len(entries), -1, -1, -1), v[:, :, :n0].expand(len(entries), -1, -1, -1))
                for k, v in first.layers
            ]
            return DynamicCache(data, config=self.config)
        like = next(e for n, e in entries if n).layers
        data = []
        for layer, (k0, v0) in enumerate(like):
            keys, values = [], []
            for n, entry in entries:
                pad = (0, 0, width - n, 0)  # zeros before the row's prefix (masked)
                k, v = entry.layers[layer] if entry is not None else (k0[:, :, :0], v0[:, :, :0])
                keys.append(torch.nn.functional.pad(k[:, :, :n], pad))
                values.append(torch.nn.functional.pad(v[:, :, :n], pad))
            data.append((torch.cat(keys), torch.cat(values)))
        return DynamicCache(data, config=self.config)

    def prefill(
        self, model, key: object, rows: Sequence[Sequence[int]], limit: int | None = None
    ) -> tuple[list[int], DynamicCache]:
        """(n per row, cache): for each row the keys and values of its longest cached prefix (at most all but the
        row's last token, which the caller's forward pass needs, and at most `limit`). The prefix the rows share
        is computed now (then kept) where it is not held, so it is read once for the batch; a row's own cached
        prefix may be longer. The cache is padded to the rows (see `view`)."""
        caps = [min(len(r) - 1, limit if limit is not None else len(r)) for r in rows]
        common = min(caps)
        for r in rows[1:]:
            common = min(common, shared_length(rows[0], r))
        computed = self._ensure(model, key, list(rows[0][:common])) if common >= self.min_tokens else 0
        entries = []
        for row, cap in zip(rows, caps, strict=True):
            n, entry = self.longest(key, row[:cap])
            entries.append((min(n, cap), entry) if n >= self.min_tokens else (0, None))
        ns = [n for n, _ in entries]
        with self._lock:
            self.reused += sum(ns) - computed
            self.prefilled += sum(len(r) - n for r, n in zip(rows, ns, strict=True))
        return ns, self.view(entries)

    def _ensure(self, model, key: object, head: list[int]) -> int:
        """Compute and keep the keys and values of `head`, from its longest cached prefix on, unless held whole;
        how many tokens the model read."""
        n, entry = self.longest(key, head)
        if n == len(head):
            return 0
        n = n if n >= self.min_tokens else 0
        cache = self.view([(n, entry if n else None)])
        with torch.inference_mode():
            ids = torch.tensor([head[n:]], device=model.device)
            model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)  # only the cache is wanted
        with self._lock:
            self.prefilled += len(head) - n
        self.put(key, head, cache)
        return len(head) - n


def layout(rows: Sequence[Sequence[int]], prefixes: Sequence[int], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of rows whose first `prefixes[i]` tokens are cached: [padding][prefix]
    [padding][suffix], the padding masked (with no prefixes this is plain left padding)."""
    width = max(prefixes, default=0)
    rest = max(len(r) - n for r, n in zip(rows, prefixes, strict=True))
    ids = torch.full((len(rows), width + rest), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, (row, n) in enumerate(zip(rows, prefixes, strict=True)):
        suffix = row[n:]
        if n:
            ids[i, width - n : width] = torch.tensor(row[:n], dtype=torch.long)
            mask[i, width - n : width] = 1
        ids[i, width + rest - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
        mask[i, width + rest - len(suffix) :] = 1
    return ids, mask
