"""Self-improvement on the bundled shop: does one LoRA round on failure samples raise the Predictor's held-out
accuracy over the base model (zero-shot and few-shot), and what does a round cost here?

Data (cached under --cache, reused by later runs): real transitions of the shop from a BFS crawl and a random walk
(cheap: no model calls while crawling). The base model predicts every transition once (batched, cached); the
transitions it gets wrong are the failure samples, exactly the j=0 set a SCALE run would keep. Per seed, whole
pages are held out (training.split_by_page); one round trains a LoRA adapter on the failures of the other pages
(Predictor views, training.sft) and the fixed rule Judger scores base, few-shot base and adapter on the same
held-out transitions. `unseen` is the accuracy on held-out transitions whose true outcome never occurs among
the training targets (no memorized answer can be right there).

    .venv/bin/python bench/training.py --seeds 0,1,2      # the reported numbers (about 6 minutes per seed here)
    .venv/bin/python bench/training.py                    # one seed (the first run also crawls and labels: ~10 min)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import print_table  # noqa: E402
from explorer.config import BrowserConfig, ExploreConfig, SiteConfig  # noqa: E402
from explorer.models import Embedder, ModelConfig, load_model  # noqa: E402
from training import TrainConfig, crawl_samples, evaluate, judge_answer, predictor_answers, split_by_page  # noqa: E402
from training.sft import sft_examples  # noqa: E402
from training.train import train_adapter  # noqa: E402

CRAWLS = {"bfs": 200, "random": 250}  # strategy -> browser actions on the shop


async def _crawl(cache: Path) -> None:
    from flows.explore import run_exploration
    from sites import serve_sites

    servers = serve_sites(port=0, slow_seconds=2)
    try:
        url = servers.urls["shop"]
        site = SiteConfig(name="shop", start_url=url, reset_url=url + "__reset", ignore_params=["sid"])
        for strategy, steps in CRAWLS.items():
            if not (cache / "runs" / f"shop-{strategy}" / "run.sqlite").exists():
                cfg = ExploreConfig(strategy=strategy, max_steps=steps, seed=0)
                await run_exploration(site, cfg, BrowserConfig(), runs_dir=cache / "runs", run_id=f"shop-{strategy}")
    finally:
        servers.stop()


def transitions(cache: Path):
    """The shop's distinct transitions (one per page and action), crawling once into the cache."""
    asyncio.run(_crawl(cache))
    seen = {}
    for strategy in CRAWLS:
        for s in crawl_samples(cache / "runs" / f"shop-{strategy}"):
            seen.setdefault((s.page_key, s.action.describe()), s)
    return list(seen.values())


def key(sample) -> str:
    return f"{sample.page_key} | {sample.action.describe()}"


def label(model, samples, similarity, cache: Path):
    """(samples relabelled by the base model's verdicts, base answers); answers are cached."""
    path = cache / "base_answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {}
    todo = [s for s in samples if key(s) not in answers]
    t0 = time.perf_counter()
    for s, a in zip(todo, predictor_answers(model, todo, None), strict=True):
        answers[key(s)] = a
    path.write_text(json.dumps(answers, indent=1))
    seconds = time.perf_counter() - t0
    labelled = [s.labelled(wrong=not judge_answer(answers[key(s)], s, similarity).correct) for s in samples]
    return labelled, seconds


def accuracy(samples, correct: set[str]) -> str:
    return f"{sum(s.id in correct for s in samples) / len(samples):.2f}" if samples else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0", help="page splits and training seeds, e.g. 0,1,2")
    p.add_argument("--heldout-share", type=float, default=0.3)
    p.add_argument("--max-train", type=int, default=40, help="failure samples trained on, at most")
    p.add_argument("--max-heldout", type=int, default=40, help="held-out transitions evaluated, at most")
    p.add_argument("--epochs", type=float, default=2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--shots", type=int, default=2, help="few-shot demonstrations for the base model (0: skip)")
    p.add_argument("--cache", default="/tmp/scalehop-bench-training")
    args = p.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)

    model = load_model(ModelConfig())
    similarity = Embedder().similarity
    samples, label_s = label(model, transitions(cache), similarity, cache)
    failures = sum(s.kind == "explore" for s in samples)
    print(f"{len(samples)} shop transitions, {failures} mispredicted by the base model (labelling {label_s:.0f} s)")
    rows, gains = [], []
    for seed in [int(x) for x in args.seeds.split(",")]:
        train_pages, heldout = split_by_page(samples, args.heldout_share, seed=seed)
        heldout = heldout[: args.max_heldout]
        examples = sft_examples([s for s in train_pages if s.kind == "explore"], ("predictor",))[: args.max_train]
        cfg = TrainConfig(
            tasks=("predictor",), epochs=args.epochs, lr=args.lr, rank=args.rank, alpha=2 * args.rank, seed=seed
        )
        result = train_adapter(examples, cfg, cache / "adapters" / f"seed-{seed}")
        name = model.load_adapter(result.adapter_dir, name=f"bench-seed-{seed}", activate=False)
        base_correct = {s.id for s in heldout if s.kind == "understood"}
        tuned = evaluate(model, heldout, similarity, name, surprise=False)
        tuned_correct = {s.id for s in heldout} - set(tuned.wrong)
        few = "-"
        if args.shots:
            shots = examples[: args.shots]
            few_report = evaluate(model, heldout, similarity, None, shots=shots, surprise=False)
            few = f"{few_report.predictor_accuracy:.2f}"
        targets = {e.completion.split("\nREASON:")[0].strip() for e in examples}
        unseen = [s for s in heldout if " ".join(s.transition.description.split()) not in targets]
        base_acc = len(base_correct) / len(heldout)
        gains.append(tuned.predictor_accuracy - base_acc)
        rows.append(
            [
                seed,
                len(examples),
                len(heldout),
                f"{base_acc:.2f}",
                few,
                f"{tuned.predictor_accuracy:.2f}",
                f"{accuracy(unseen, base_correct)} -> {accuracy(unseen, tuned_correct)} (n={len(unseen)})",
                f"{result.seconds:.0f}",
                f"{result.tokens_per_s:.0f}",
                f"{tuned.seconds:.0f}",
            ]
        )
        print("seed", *rows[-1], file=sys.stderr, flush=True)  # progress; the table comes at the end
    print_table(
        [
            "seed",
            "train",
            "held-out",
            "base",
            "few-shot",
            "adapter",
            "unseen: base -> adapter",
            "train s",
            "tok/s",
            "eval s",
        ],
        rows,
    )
    print(f"mean held-out gain over the base model: {sum(gains) / len(gains):+.2f} (seeds {args.seeds})")


if __name__ == "__main__":
    main()
