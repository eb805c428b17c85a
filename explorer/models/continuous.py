"""Continuous batching on the local backend: rows join a running batch between decode steps and leave it when
they end, as vLLM schedules its requests, instead of waiting for the whole batch to finish.

`generate` runs a batch to its longest row, so under load (SCALE's browser contexts, `serve-model`'s clients) a
request that arrives one step late waits for all of it, and the batches settle into a few rows and one straggler.
Here the batch is one KV cache with a row per request, left-padded to a common width: a new request's prompt is
read in one forward pass (its prefix from the prefix cache, like any call), its keys and values are padded into the
batch, and every decode step then moves all rows by one token. Each row keeps its own grammar matcher (xgrammar),
token limit, stop strings and role accounting; a finished row is cut out of the cache at once. Greedy rows write
what they would write alone (up to float rounding across batch shapes).

The rows of one batch share weights (adapter), temperature and stop strings; `Batcher` starts a batch with other
settings when the running one has drained.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from explorer.models.base import Generation, Message, Usage
from explorer.models.grammar import mask_logits
from explorer.models.local import Clock


@dataclass(frozen=True)
class Request:
    """One generation the decoder runs: a conversation and what may differ between the rows of a batch."""

    messages: Sequence[Message]
    max_tokens: int | None  # None: the config's max_new_tokens
    grammar: str | None = None  # a regex the completion must match
    role: str | None = None  # accounted to
    future: Future = field(default_factory=Future, compare=False)


@dataclass
class _Stream:
    """A request in flight: its tokens so far, its grammar state and the model seconds it was charged."""

    request: Request
    prompt_tokens: int
    cached_tokens: int
    limit: int
    matcher: object | None
    lead: bool = True  # the first of the rows admitted together: they count as one request
    tokens: list[int] = field(default_factory=list)
    prefill: float = 0.0
    decode: float = 0.0
    started: float = field(default_factory=time.perf_counter)


class ContinuousBatch:
    """The rows in flight on one LocalModel with one set of weights, temperature and stop strings. `admit` adds
    requests (one prefill pass), `step` moves every row by one token and resolves the futures of rows that end.
    Used from one thread (the batcher's worker)."""

    def __init__(
        self, model, *, adapter: str | None, use_adapter: bool, temperature: float, stop: Sequence[str]
    ) -> None:
        self.model = model
        self.adapter, self.use_adapter = adapter, use_adapter
        self.temperature, self.stop = temperature, tuple(stop)
        self.streams: list[_Stream] = []
        self.cache: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer: keys, values [rows, heads, width, dim]
        self.mask: torch.Tensor | None = None  # [rows, width]: 1 where a row has a token, 0 for its padding
        self.next_tokens: list[int] = []  # per row: the token the next step feeds
        self._ends = model.end_ids()

    @property
    def key(self) -> tuple:
        """What a request must share to join: weights, temperature and stop strings."""
        return (self.adapter, self.use_adapter, self.temperature, self.stop)

    def __len__(self) -> int:
        return len(self.streams)

    def admit(self, requests: Sequence[Request]) -> None:
        """Read the requests' prompts in one forward pass and add them as rows (their first token is chosen here;
        a request that already ends there is resolved at once). A model error fails these requests only."""
        model = self.model
        t0 = time.perf_counter()
        try:
            prompts = [model.prompt_text(r.messages) for r in requests]
            inputs = model._encode(prompts, [None] * len(requests))
            with model._lock, model._adapter_context(self.adapter, self.use_adapter), torch.inference_mode():
                clock = Clock()
                key = model._weights_key(self.adapter, self.use_adapter)
                laid, logits, cache = model._forward(inputs, 1, None, key, clock, remember=len(requests) > 1)
            compiled = model.grammars.compiled([r.grammar for r in requests]) if model.enforces_grammar else None
        except Exception as exc:  # noqa: BLE001 - the callers see the model's error; the batch lives on
            for r in requests:
                r.future.set_exception(exc)
            return
        seconds = (time.perf_counter() - t0) / len(requests)
        lengths = laid["attention_mask"].sum(1).tolist()
        cached = round(clock.cached / len(requests))
        new = [
            _Stream(
                r,
                int(n),
                cached,
                r.max_tokens or model.config.max_new_tokens,
                _matcher(compiled, i),
                lead=i == 0,
                prefill=seconds,
            )
            for i, (r, n) in enumerate(zip(requests, lengths, strict=True))
        ]
        self._join(new, [(layer.keys, layer.values) for layer in cache.layers], laid["attention_mask"])
        self._advance(len(self.streams) - len(new), logits[:, -1].float())

    def step(self) -> None:
        """One decode step for every row; rows that end are resolved and leave the batch."""
        if not self.streams:
            return
        model = self.model
        t0 = time.perf_counter()
        mask = torch.cat([self.mask, self.mask.new_ones((len(self.streams), 1))], dim=1)
        ids = torch.tensor(self.next_tokens, device=mask.device)[:, None]
        positions = self.mask.sum(1, keepdim=True)
        cache = DynamicCache(ddp_cache_data=self.cache)
        try:
            with model._lock, model._adapter_context(self.adapter, self.use_adapter), torch.inference_mode():
                out = model.hf_model(
                    input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True
                )
        except Exception as exc:  # noqa: BLE001 - every row in flight fails with the model's error
            self.fail(exc)
            return
        self.cache = [(layer.keys, layer.values) for layer in cache.layers]
        self.mask = mask
        share = (time.perf_counter() - t0) / len(self.streams)
        for s in self.streams:
            s.decode += share
        self._advance(0, out.logits[:, -1].float())

    def fail(self, exc: BaseException, requests: Sequence[Request] = ()) -> None:
        """Resolve every row in flight, and `requests` not yet resolved, with `exc`, and empty the batch (an
        unexpected error in the worker: the callers see it instead of waiting forever)."""
        for r in [s.request for s in self.streams] + list(requests):
            if not r.future.done():
                r.future.set_exception(exc)
        self.streams, self.cache, self.mask, self.next_tokens = [], [], None, []

    def _join(self, new: list[_Stream], cache: list[tuple[torch.Tensor, torch.Tensor]], mask: torch.Tensor) -> None:
        """Pad the running rows and the new ones to one width (on the left) and stack them."""
        if not self.streams:
            self.streams, self.cache, self.mask = new, cache, mask
            return
        width = max(self.mask.shape[1], mask.shape[1])
        self.cache = [
            (torch.cat([_left(k0, width), _left(k1, width)]), torch.cat([_left(v0, width), _left(v1, width)]))
            for (k0, v0), (k1, v1) in zip(self.cache, cache, strict=True)
        ]
        self.mask = torch.cat([_left(self.mask, width, dim=1), _left(mask, width, dim=1)])
        self.streams += new

    def _advance(self, first: int, logits: torch.Tensor) -> None:
        """Choose the next token of rows `first`.. from their logits (one row each), under each row's grammar;
        then resolve the rows that ended and cut them out."""
        rows = self.streams[first:]
        matchers = [s.matcher for s in rows]  # a row whose grammar ended is left free: its next token ends it
        mask_logits(logits, matchers, [k for k, m in enumerate(matchers) if m is not None and not m.is_terminated()])
        if self.temperature > 0:
            chosen = torch.multinomial(torch.softmax(logits / self.temperature, dim=-1), 1)[:, 0].tolist()
        else:
            chosen = logits.argmax(-1).tolist()
        self.next_tokens = self.next_tokens[:first] + chosen
        done = []
        for k, (s, token) in enumerate(zip(rows, chosen, strict=True), start=first):
            s.tokens.append(token)
            if s.matcher is not None and not s.matcher.is_terminated():
                s.matcher.accept_token(token)
            if token in self._ends or len(s.tokens) >= s.limit or self._stopped(s):
                done.append(k)
        if done:
            self._finish(done)

    def _stopped(self, s: _Stream) -> bool:
        """Whether a stop string appears in the row's text so far."""
        if not self.stop:
            return False
        text = self.model.tokenizer.decode(s.tokens[-16:], skip_special_tokens=True)
        return any(stop in text for stop in self.stop)

    def _finish(self, done: list[int]) -> None:
        """Resolve rows `done` and remove them from the batch (and the padding no remaining row needs)."""
        model = self.model
        for k in done:
            s = self.streams[k]
            text, prompt, completion, finish = model._finish(s.tokens, s.prompt_tokens, s.limit, self.stop)
            seconds = time.perf_counter() - s.started
            usage = Usage(prompt, completion, seconds)
            model._meter.record(
                s.request.role,
                [usage],
                s.prefill + s.decode,
                prefill=s.prefill,
                decode=s.decode,
                cached_tokens=s.cached_tokens,
                requests=int(s.lead),
            )
            s.request.future.set_result(Generation(text, usage, finish))
        ended = set(done)
        keep = [k for k in range(len(self.streams)) if k not in ended]
        self.streams = [self.streams[k] for k in keep]
        self.next_tokens = [self.next_tokens[k] for k in keep]
        if not keep:
            self.cache, self.mask = [], None
            return
        index = torch.tensor(keep, device=self.mask.device)
        mask = self.mask.index_select(0, index)
        start = int((mask.sum(0) > 0).nonzero()[0])  # columns every remaining row pads: dropped
        self.mask = mask[:, start:]
        self.cache = [
            (k.index_select(0, index)[:, :, start:], v.index_select(0, index)[:, :, start:]) for k, v in self.cache
        ]


def _left(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    """`t` padded with zeros on the left of `dim` to `width`."""
    missing = width - t.shape[dim]
    if missing <= 0:
        return t
    pad = [0, 0] * (t.dim() - 1 - dim) + [missing, 0]
    return F.pad(t, pad)


def _matcher(compiled: list | None, i: int):
    """A fresh grammar matcher for row i (None: a free row)."""
    if compiled is None or compiled[i] is None:
        return None
    import xgrammar as xgr

    return xgr.GrammarMatcher(compiled[i])
