"""The embedded model on this machine: load time, and greedy decoding single vs batched, float32 vs bfloat16.

1. Eight role-sized prompts (~300 tokens: a page's element list and a question), 32 new tokens each, answered one
   at a time and in batches of 4 and 8 through the public `generate`/`generate_batch`, with the model-call
   speedups off. The modes are interleaved over the repeats, so drift in machine load hits them alike. Also times
   the GGUF conversion (a first run) against a load from the cache.
2. One observation's questions, as SCALE asks them (the N verification predictions at a node share the page and
   differ in the action): naive `generate` one at a time (no prefix reuse, no drafts) against the default config,
   one at a time (prefix reuse, prompt lookup drafts) and in one batch (prefix reuse), in the default dtype.
   Output tokens per second and the ratio to naive, side by side in one run.
3. Where a decode step goes: one forward pass of one new token after a 700-token context (the KV cache kept), at
   1 and 2 torch threads interleaved; the weight bytes every such step reads (the output layer's share apart),
   and the share of the step's CPU time in matrix products (torch's profiler). A step that reads all weights
   for one token is bound by memory bandwidth: only fewer or smaller weights, or more rows per read, make it
   cheaper.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common import median, pct, print_table  # noqa: E402
from explorer.models import LocalModel, ModelConfig, embedded_model_dir  # noqa: E402

NEW_TOKENS = 32
PROMPTS = 8
REPEATS = 2
MODES = {"single": 1, "batch 4": 4, "batch 8": 8}
DTYPES = ("float32", "bfloat16")
NAIVE = {"prefix_cache": False, "draft_tokens": 0}  # plain `generate`: every prompt read in full, a token a pass


def page_prompt(i: int) -> list[dict[str, str]]:
    """A role-sized prompt: a page summary with 22 elements, then a question about one of them."""
    kinds = ["link", "button", "textbox", "combobox", "tab"]
    names = ["Shoes", "Bags", "Sale", "Sign in", "Cart", "Next page", "Sort by price", "Search", "Reviews", "Help"]
    lines = [f"[{k}] {kinds[(k + i) % 5]} '{names[(k * 3 + i) % 10]} {k}'" for k in range(22)]
    question = f"What happens when element [{(i * 7) % 22}] is clicked? Answer in one sentence."
    return [
        {"role": "system", "content": "You predict what a web page does. Be brief."},
        {"role": "user", "content": f"Page: Shop - page {i + 1}\n" + "\n".join(lines) + "\n" + question},
    ]


def observation_prompts(n: int) -> list[list[dict[str, str]]]:
    """n questions about one page: the page (system prompt and element list) is shared, the action differs."""
    page = page_prompt(0)
    lines = page[1]["content"].splitlines()[:-1]
    return [
        [page[0], {"role": "user", "content": "\n".join(lines) + f"\nWhat happens when element [{k}] is clicked?"}]
        for k in range(n)
    ]


def load_times() -> list[list[object]]:
    """Seconds to convert the GGUF into the (fresh) cache, and then to load from it."""
    t0 = time.perf_counter()
    embedded_model_dir()
    convert = time.perf_counter() - t0
    t0 = time.perf_counter()
    LocalModel(ModelConfig())
    cached = time.perf_counter() - t0
    return [["GGUF -> cache (first run)", convert], ["LocalModel from cache", cached]]


def run_mode(model: LocalModel, prompts: list, size: int) -> tuple[float, int, list[float]]:
    """(wall seconds, completion tokens, per-request latencies) for all prompts in batches of `size`."""
    tokens, latencies = 0, []
    t0 = time.perf_counter()
    for start in range(0, len(prompts), size):
        t1 = time.perf_counter()
        gens = model.generate_batch(prompts[start : start + size], max_tokens=NEW_TOKENS, role="bench")
        latencies.append(time.perf_counter() - t1)
        tokens += sum(g.usage.completion_tokens for g in gens)
    return time.perf_counter() - t0, tokens, latencies


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["SCALEHOP_CACHE"] = cache  # a fresh cache: the first load converts, as on a new machine
        bench()


def bench() -> None:
    print(f"embedded model on {os.cpu_count()} CPUs; {PROMPTS} prompts x {NEW_TOKENS} new tokens, greedy")
    print_table(["load", "seconds"], load_times())
    prompts = [page_prompt(i) for i in range(PROMPTS)]
    rows, base = [], None
    for dtype in DTYPES:
        model = LocalModel(ModelConfig(dtype=dtype, batch_size=max(MODES.values()), **NAIVE))
        prompt_tokens = median([model.generate(p, max_tokens=1).usage.prompt_tokens for p in prompts])  # + warm-up
        runs: dict[str, list[tuple[float, int, list[float]]]] = {m: [] for m in MODES}
        for _ in range(REPEATS):
            for mode, size in MODES.items():
                runs[mode].append(run_mode(model, prompts, size))
        for mode, results in runs.items():
            tok_s = median([tokens / wall for wall, tokens, _ in results])
            latencies = [lat for _, _, lats in results for lat in lats]
            base = base or tok_s
            rows.append(
                [dtype, mode, prompt_tokens, median(latencies), pct(latencies, 0.9), tok_s, f"{tok_s / base:.2f}x"]
            )
    print(f"\ngreedy decoding, {NEW_TOKENS} new tokens per prompt (latency: seconds per request; tok/s: output)")
    print_table(["dtype", "mode", "prompt tok", "latency p50", "latency p90", "tok/s", "vs fp32 single"], rows)
    one_observation()


def one_observation() -> None:
    """Section 2: one page's N questions, naive against the speedups (default dtype), tokens/s side by side."""
    prompts = observation_prompts(PROMPTS)
    arms = {
        "naive, one at a time": (LocalModel(ModelConfig(**NAIVE)), 1),
        "prefix reuse + drafts, one at a time": (LocalModel(ModelConfig()), 1),
        f"prefix reuse, batch of {PROMPTS}": (LocalModel(ModelConfig(batch_size=PROMPTS)), PROMPTS),
    }
    for model, _ in arms.values():
        model.generate(prompts[0], max_tokens=1)  # warm-up
    runs: dict[str, list[tuple[float, int, list[float]]]] = {arm: [] for arm in arms}
    for _ in range(REPEATS):
        for arm, (model, size) in arms.items():
            runs[arm].append(run_mode(model, prompts, size))
    rows, base = [], None
    for arm, results in runs.items():
        tok_s = median([tokens / wall for wall, tokens, _ in results])
        base = base or tok_s
        rows.append([arm, median([wall for wall, _, _ in results]), tok_s, f"{tok_s / base:.2f}x"])
    dtype = arms["naive, one at a time"][0].hf_model.dtype
    print(f"\none observation: {PROMPTS} questions sharing a page, {NEW_TOKENS} new tokens each, {dtype}")
    print_table(["calls", "seconds", "tok/s", "vs naive"], rows)
    decode_step()


def decode_step(context: int = 700, steps: int = 20) -> None:
    """Section 3: milliseconds of a one-token forward by dtype and torch threads (interleaved), the weights a
    step reads, and its share of CPU time in matrix products."""
    import torch

    models = {dtype: LocalModel(ModelConfig(dtype=dtype, **NAIVE)).hf_model for dtype in DTYPES}
    ids = torch.randint(0, models["float32"].config.vocab_size, (1, context))

    def forward_ms(hf) -> float:
        with torch.inference_mode():
            cache = hf(ids, use_cache=True).cache
            t0 = time.perf_counter()
            for _ in range(steps):
                cache = hf(ids[:, -1:], cache=cache, use_cache=True).cache
            return (time.perf_counter() - t0) / steps * 1000

    threads, arms = torch.get_num_threads(), [(d, n) for d in DTYPES for n in (1, 2)]
    times: dict[tuple[str, int], list[float]] = {arm: [] for arm in arms}
    for _ in range(REPEATS):
        for dtype, n in arms:
            torch.set_num_threads(n)
            times[dtype, n].append(forward_ms(models[dtype]))
    torch.set_num_threads(threads)
    base = median(times["float32", 1])
    rows = []
    for (dtype, n), ms in times.items():
        weights = sum(t.numel() * t.element_size() for t in models[dtype].parameters())
        rows.append([dtype, n, weights / 1e6, median(ms), f"{base / median(ms):.2f}x"])
    with torch.inference_mode(), torch.profiler.profile() as prof:
        forward_ms(models["float32"])
    events = prof.key_averages()
    mm = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::addmm", "aten::bmm"))
    head = models["float32"].get_output_embeddings().weight
    print(f"\none decode step: 1 new token after {context} tokens of context, mean of {steps}, modes interleaved")
    print_table(["dtype", "torch threads", "weights read (MB)", "ms per token", "speed vs float32, 1 thread"], rows)
    share = mm / sum(e.self_cpu_time_total for e in events)
    print(f"float32: the output layer is {head.numel() * 4 / 1e6:.0f} MB of it; {share:.0%} of CPU time in matmuls")


if __name__ == "__main__":
    main()
