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

    def processor(self, pattern: str, rows: int = 1):
        """A fresh logits processor that holds `rows` completions to `pattern`."""
        import xgrammar as xgr

        with self._lock:
            compiled = self._compiler.compile_regex(pattern)
        return xgr.contrib.hf.LogitsProcessor([compiled] * rows)
