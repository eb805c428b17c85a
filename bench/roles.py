"""Role calls with the embedded model on real observations of the bundled sites.

Prompt size per observation and Predictor latency / tokens per second, before and after the prompt work:
`full page` puts the whole element list into the prompt (the naive form), `compact` (what scalehop sends)
gives the page summary and the target's neighbourhood only. Each is run single and batched (4 per call,
as verification does), interleaved, in one run.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common import median, print_table  # noqa: E402
from explorer import Action, BrowserConfig, Chromium, SiteConfig  # noqa: E402
from explorer.baselines import random_step  # noqa: E402
from explorer.candidates import action_for, usable_elements  # noqa: E402
from explorer.models import ModelConfig, load_model  # noqa: E402
from explorer.roles import predictor_messages  # noqa: E402
from explorer.roles.context import page_summary  # noqa: E402
from explorer.roles.predictor import MAX_TOKENS  # noqa: E402
from explorer.roles.prompts import messages  # noqa: E402
from sites import serve_sites  # noqa: E402

PAGES_PER_SITE = 4
BATCH = 4


async def observations():
    """A few observations per bundled site, from a short seeded random walk, with a target element each."""
    servers = serve_sites(port=0, slow_seconds=2)
    out, rng = [], random.Random(0)
    try:
        sites = [SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in servers.urls.items()]
        async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites]) as chromium:
            for site in sites:
                session = await chromium.new_session(site)
                await session.reset()
                for _ in range(PAGES_PER_SITE):
                    obs = await session.observe()
                    target = rng.choice(usable_elements(obs, site))
                    out.append((obs, action_for(target, rng), target))
                    await session.act(random_step(obs, site, rng), obs)
                    if not session.page.url.startswith(site.start_url):
                        await session.act(Action(kind="goto", url=site.start_url))
                await session.close()
    finally:
        servers.stop()
    return out


def full_page_messages(obs, action, target):
    """The naive Predictor prompt: the whole element list instead of the neighbourhood."""
    return messages(
        "predictor", page=page_summary(obs), neighbourhood=obs.text, action=action.describe(), selector_reasoning="-"
    )


def main() -> None:
    samples = asyncio.run(observations())
    model = load_model(ModelConfig())
    builders = {"full page": full_page_messages, "compact": lambda o, a, t: predictor_messages(o, a, t, "-")}
    prompts = {name: [build(o, a, t) for o, a, t in samples] for name, build in builders.items()}
    results = {(name, mode): [] for name in builders for mode in ("single", f"batch {BATCH}")}
    tokens_in = {name: [] for name in builders}
    for start in range(0, len(samples), BATCH):
        for name, convs in prompts.items():  # interleaved: load drift hits every variant alike
            chunk = convs[start : start + BATCH]
            t0 = time.perf_counter()
            gens = [model.generate(c, max_tokens=MAX_TOKENS, role="bench") for c in chunk]
            results[(name, "single")].append(
                (time.perf_counter() - t0, sum(g.usage.completion_tokens for g in gens), len(chunk))
            )
            tokens_in[name] += [g.usage.prompt_tokens for g in gens]
            t0 = time.perf_counter()
            gens = model.generate_batch(chunk, max_tokens=MAX_TOKENS, role="bench")
            results[(name, f"batch {BATCH}")].append(
                (time.perf_counter() - t0, sum(g.usage.completion_tokens for g in gens), len(chunk))
            )
    base = None
    rows = []
    for (name, mode), runs in results.items():
        seconds = sum(r[0] for r in runs)
        calls = sum(r[2] for r in runs)
        tok_s = sum(r[1] for r in runs) / seconds
        per_call = seconds / calls
        base = base or per_call
        rows.append(
            [name, mode, round(median(tokens_in[name])), f"{per_call:.2f}", f"{tok_s:.1f}", f"{base / per_call:.2f}x"]
        )
    print(f"Predictor calls on {len(samples)} real observations ({MAX_TOKENS} new tokens max, greedy)")
    print_table(["prompt", "mode", "prompt tokens p50", "s per call", "gen tok/s", "speed-up"], rows)


if __name__ == "__main__":
    main()
