"""Constrained decoding libraries on the embedded model's tokenizer: xgrammar vs outlines-core, side by side.

For the roles' real grammars (the Selector's shown marks and reason, the Predictor's outcome grammar, the Actor's
whole action grammar over a page's elements) it measures, in one run:
- compile: turning the regex into a token-level automaton (the Selector's marks change every step, so this is
  paid on most calls);
- mask: one step of the token mask on the first token (xgrammar's `fill_next_token_bitmask`, outlines-core's
  `Guide.get_tokens`), what every generated token costs on top of the forward pass.
The winner is what explorer/models/grammar.py uses.

    .venv/bin/python bench/grammar.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/

from bench.common import median, print_table  # noqa: E402
from explorer.models import ModelConfig  # noqa: E402
from explorer.models.embedded import resolve_model_path  # noqa: E402
from explorer.records import Element  # noqa: E402
from explorer.roles.actor import VERBS, _Start, answer_grammar  # noqa: E402
from explorer.roles.predictor import OUTCOME_GRAMMAR  # noqa: E402
from explorer.roles.selector import selector_grammar  # noqa: E402


def _elements(n: int, first_mark: int) -> list[Element]:
    roles = ("link", "button", "textbox", "combobox")
    return [
        Element(
            mark=first_mark + i,
            tag="a",
            role=roles[i % 4],
            name=f"Item {i}",
            options=["Price (low to high)", "Newest"] if roles[i % 4] == "combobox" else [],
            bbox=(0, 0, 1, 1),
            point=(0, 0),
            key=f"k{i}",
        )
        for i in range(n)
    ]


def grammars(repeats: int) -> dict[str, list[str]]:
    """Per role, `repeats` distinct regexes as the roles build them (marks differ from page to page)."""
    return {
        "selector (8 marks)": [selector_grammar(_elements(8, 3 + 7 * r)) for r in range(repeats)],
        # constant in use (compiled once, then cached); varied here so that each compile is a real one
        "predictor (outcome)": [OUTCOME_GRAMMAR.replace("{1,200}", f"{{1,{200 + r}}}") for r in range(repeats)],
        "actor (15 elements)": [
            answer_grammar(_Start(), list(VERBS), _elements(15, 2 + 5 * r)) for r in range(repeats)
        ],
    }


def _xgrammar(tokenizer, vocab_size: int):
    import xgrammar as xgr

    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size))
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)

    def compile_(pattern: str):
        return compiler.compile_regex(pattern)

    def mask(compiled) -> None:
        xgr.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask, 0)

    return compile_, mask


def _outlines(tokenizer):
    from outlines_core import Guide, Index, Vocabulary

    tokens: dict[str, list[int]] = {}
    for token, i in tokenizer.get_vocab().items():
        if i != tokenizer.eos_token_id:
            tokens.setdefault(tokenizer.convert_tokens_to_string([token]), []).append(i)
    vocabulary = Vocabulary(tokenizer.eos_token_id, tokens)

    def compile_(pattern: str):
        return Index(pattern, vocabulary)

    def mask(index) -> None:
        Guide(index).get_tokens()

    return compile_, mask


def _timed(fn, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="distinct grammars per role (the first compile warms up)")
    args = p.parse_args()
    from transformers import AutoConfig, AutoTokenizer

    path = resolve_model_path(ModelConfig().model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    vocab_size = AutoConfig.from_pretrained(path).vocab_size
    libraries = {"xgrammar": _xgrammar(tokenizer, vocab_size), "outlines-core": _outlines(tokenizer)}
    rows = []
    for role, patterns in grammars(args.repeats + 1).items():
        row = [role]
        for compile_, mask in libraries.values():
            compiled, compiles, masks = None, [], []
            try:
                for i, pattern in enumerate(patterns):
                    seconds, compiled = _timed(compile_, pattern)
                    if i:  # the first one warms caches up
                        compiles.append(seconds)
                        masks.append(_timed(mask, compiled)[0])
                row += [median(compiles) * 1000, median(masks) * 1000]
            except ValueError as exc:  # outlines-core: "Failed to build DFA ..." on the Actor's grammar
                row += [f"fails: {str(exc)[:40]}", "-"]
        ok = all(isinstance(c, float) for c in (row[1], row[3]))
        row.append(row[3] / row[1] if ok and row[1] else "-")
        rows.append(row)
    model = ModelConfig().model
    print(f"\nconstrained decoding on {model}'s tokenizer ({vocab_size} tokens); median of {args.repeats}\n")
    heads = ["grammar", "xgrammar compile ms", "xgrammar mask ms", "outlines-core compile ms", "outlines-core mask ms"]
    print_table([*heads, "compile ratio"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
