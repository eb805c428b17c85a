"""Constrained decoding on the local backend: a role's answer format as a regular expression over the completion,
compiled by xgrammar against the model's tokenizer and applied as a transformers logits processor, so that every
token the model writes keeps the answer parsable.

xgrammar was measured against outlines-core on the embedded model's tokenizer (`bench/grammar.py`): a Selector
grammar (its shown marks, then a reason) compiles in about 33 ms with xgrammar and about 1.1 s with outlines-core,
which cannot build the Predictor's outcome grammar at all; the marks change at every step, so the grammar is
compiled anew for almost every call.

`literal` and `one_of` build the pieces the roles' grammars are made of; `REASON` is the free line they end with.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property

import torch
from transformers import LogitsProcessor

from explorer.models.prefix_cache import shared_length

_SPECIAL = set(r"\^$.|?*+()[]{}")
REASON_CHARS = 80  # a reason is one short clause: every character is decoded, and a step pays for it
REASON_TEXT = rf" [^\n]{{1,{REASON_CHARS}}}"  # a short free reason, after its `REASON:` label
REASON = r"\nREASON:" + REASON_TEXT  # the labelled reason every role's answer ends with


def literal(text: str) -> str:
    """`text` as a regex matching exactly it (xgrammar's regex syntax is ECMAScript's)."""
    return "".join("\\" + c if c in _SPECIAL else "\\n" if c == "\n" else c for c in text)


def one_of(options: Sequence[str]) -> str:
    """A group matching exactly one of `options`."""
    return "(" + "|".join(literal(o) for o in options) + ")"


class Grammars:
    """Compiles regexes for one tokenizer (xgrammar caches compiled grammars) and makes the logits processors
    `generate` takes: one per call, since a processor carries its matchers' state."""

    def __init__(self, tokenizer, vocab_size: int) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size  # the logits' width, which may exceed the tokenizer's vocabulary (padding)
        self._lock = threading.Lock()

    @cached_property
    def _compiler(self):
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.vocab_size)
        return xgr.GrammarCompiler(info)

    def compiled(self, patterns: Sequence[str | None]) -> list:
        """Each pattern compiled (None for None: a free row)."""
        with self._lock:
            done = {p: self._compiler.compile_regex(p) for p in dict.fromkeys(patterns) if p is not None}
        return [done.get(p) for p in patterns]

    def processor(self, patterns: Sequence[str | None], prompt_length: int):
        """A fresh logits processor that holds each row's completion (the tokens after `prompt_length`) to its
        pattern (`patterns`: one per row; None leaves a row free)."""
        return GrammarProcessor(self.compiled(patterns), prompt_length)


def mask_logits(scores: torch.Tensor, matchers: Sequence, rows: Sequence[int], bitmask=None) -> torch.Tensor:
    """Mask `rows` of `scores` (one row of logits per matcher) to the tokens each row's matcher allows next, in
    place; `bitmask`: a reusable xgrammar bitmask of the batch (allocated here when None)."""
    if not rows:
        return scores
    import xgrammar as xgr

    if bitmask is None:
        bitmask = xgr.allocate_token_bitmask(len(matchers), scores.shape[-1])
    for row in rows:
        matchers[row].fill_next_token_bitmask(bitmask, row)
    xgr.apply_token_bitmask_inplace(scores, bitmask.to(scores.device), indices=list(rows))
    return scores


class GrammarProcessor(LogitsProcessor):
    """Masks each row's next-token logits to what keeps its completion (the tokens after `prompt_length`) inside its
    compiled grammar (one per row, so the rows of a batch may be different roles' calls; None: a free row).
    Unlike xgrammar's own transformers processor, which accepts one new token per call, it reads each row's state
    from the tokens it is shown and rolls its matcher back where they differ from what it accepted:
    assisted decoding (draft tokens checked in one forward pass, `prompt_lookup_num_tokens`) shows it each draft
    position in turn, then drops the drafts the model disagreed with. A position after a draft token the grammar
    forbids is left unmasked: the model's own pick differs there, so nothing after it is kept."""

    def __init__(self, compiled: Sequence, prompt_length: int) -> None:
        self.compiled = list(compiled)
        self.prompt_length = prompt_length
        self.matchers: list = []
        self.accepted: list[list[int]] = []
        self.bitmask = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        import xgrammar as xgr

        if not self.matchers:
            info = next(c for c in self.compiled if c is not None).tokenizer_info
            self.matchers = [xgr.GrammarMatcher(c) if c is not None else None for c in self.compiled]
            self.accepted = [[] for _ in self.compiled]
            self.bitmask = xgr.allocate_token_bitmask(len(self.compiled), info.vocab_size)
        tails = input_ids[:, self.prompt_length :].tolist()
        masked = [row for row, ids in enumerate(tails) if self.matchers[row] is not None and self._sync(row, ids)]
        return mask_logits(scores, self.matchers, masked, self.bitmask)

    def _sync(self, row: int, ids: list[int]) -> bool:
        """Bring row's matcher to the state after `ids`; False where it has ended or `ids` leave the grammar."""
        matcher, accepted = self.matchers[row], self.accepted[row]
        same = shared_length(accepted, ids)
        if same < len(accepted):
            matcher.rollback(len(accepted) - same)
            del accepted[same:]
        for token in ids[same:]:
            if matcher.is_terminated() or not matcher.accept_token(token):
                return False
            accepted.append(token)
        return not matcher.is_terminated()
