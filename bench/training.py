"""Self-improvement on the bundled sites: does one LoRA round on failure samples raise the Predictor's held-out
accuracy above the floor, the base model and the few-shot base model, and what does a round cost here?

Data (cached under --cache, reused by later runs): real transitions of each site in --sites from a click-and-return
BFS (`bfs-click`: every link is a clicked element action) and a random walk (cheap: no model calls while crawling).
The base model predicts every transition once, decoded as the live Predictor decodes (it picks the outcome kind, then
writes the rest; training.evaluate), batched and cached; the transitions it gets wrong are the failure samples,
exactly the j=0 set a SCALE run would keep. The fixed rule Judger (rule-v2) compares a predicted page with every page
its run has seen.

Two splits, each per seed (the seed picks the held-out pages, shuffles the training failures and seeds training):
- page split (within site): whole pages of every site are held out (training.split_by_page; up to --max-heldout
  of their transitions, drawn with the seed); the adapter trains on the failures of the other pages.
- leave-one-site-out (with two or more sites): for each site, the adapter trains on the failures of the other
  sites and is scored on (up to --max-heldout of) the held-out site's transitions.
On the same held-out transitions the table shows the floor (the best know-nothing answer: the site's name, the
most common title, "Nothing visible changes.", ...; training.heldout_floor), the base model, the base model with
--shots demonstrations retrieved per held-out transition (the training examples whose page title and action read
most alike, by MiniLM embedding: training.ShotRetriever), and the adapter. A gain counts only above the floor.
`unseen` is the accuracy on held-out transitions whose true outcome never occurs among the training targets.

    .venv/bin/python bench/training.py --seeds 0,1,2      # the reported numbers
    .venv/bin/python bench/training.py --seeds 0,1,2 --threads 1 --max-train 20 --max-heldout 20  # a shared CPU
    .venv/bin/python bench/training.py                    # one seed (the first run also crawls and labels)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import print_table, spread  # noqa: E402
from explorer.config import BrowserConfig, ExploreConfig, SiteConfig  # noqa: E402
from explorer.models import Embedder, ModelConfig, load_model  # noqa: E402
from training import (  # noqa: E402
    ShotRetriever,
    TrainConfig,
    crawl_samples,
    heldout_floor,
    judge_answer,
    predictor_answers,
    run_cases,
    split_by_page,
)
from training.evaluate import evaluate  # noqa: E402
from training.sft import sft_examples  # noqa: E402
from training.train import train_adapter  # noqa: E402

CRAWLS = {"bfs-click": 200, "random": 250}  # strategy -> browser actions per site (element actions: bfs-click)
ANSWERS = "base_answers-live.json"  # the base model's answers, decoded as the live Predictor decodes
PAGE_SPLIT = "page split (within site)"


async def _crawl(cache: Path, sites: list[str], steps: dict[str, int]) -> None:
    from explorer.run import run_exploration
    from sites import serve_sites

    servers = serve_sites(port=0, slow_seconds=2)
    try:
        for name in sites:
            url = servers.urls[name]
            site = SiteConfig(name=name, start_url=url, reset_url=url + "__reset", ignore_params=["sid"])
            for strategy, n in steps.items():
                if not (cache / "runs" / f"{name}-{strategy}" / "run.sqlite").exists():
                    cfg = ExploreConfig(strategy=strategy, max_steps=n, seed=0)
                    await run_exploration(
                        site, cfg, BrowserConfig(), runs_dir=cache / "runs", run_id=f"{name}-{strategy}"
                    )
    finally:
        servers.stop()


def transitions(cache: Path, sites: list[str], steps: dict[str, int]):
    """(the sites' distinct transitions: one per page and action, every crawled transition), crawling once into
    the cache. The second list is what the Judger's pages are built from: every page each run saw."""
    asyncio.run(_crawl(cache, sites, steps))
    seen, every = {}, []
    for name in sites:
        for strategy in steps:
            for s in crawl_samples(cache / "runs" / f"{name}-{strategy}"):
                every.append(s)
                seen.setdefault((s.page_key, s.action.describe()), s)
    return list(seen.values()), every


def key(sample) -> str:
    return f"{sample.page_key} | {sample.action.describe()}"


def label(model, samples, similarity, runs, cache: Path):
    """(samples relabelled by the base model's verdicts, labelling seconds); answers are cached."""
    path = cache / ANSWERS
    answers = json.loads(path.read_text()) if path.exists() else {}
    todo = [s for s in samples if key(s) not in answers]
    t0 = time.perf_counter()
    for start in range(0, len(todo), 32):  # saved as it goes: a long first labelling survives an interruption
        chunk = todo[start : start + 32]
        for s, a in zip(chunk, predictor_answers(model, chunk, None), strict=True):
            answers[key(s)] = a
        path.write_text(json.dumps(answers, indent=1))
        print(f"labelled {start + len(chunk)}/{len(todo)}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    labelled = [
        s.labelled(wrong=not judge_answer(answers[key(s)], s, similarity, runs[s.run].pages).correct) for s in samples
    ]
    return labelled, seconds


def accuracy(samples, correct: set[str]) -> str:
    return f"{sum(s.id in correct for s in samples) / len(samples):.2f}" if samples else "-"


def one_split(model, similarity, embed, runs, train_pool, heldout, seed: int, tag: str, args, cache: Path) -> dict:
    """Train on the failures of `train_pool`, then floor / base / few-shot / adapter on `heldout`."""
    failures = [s for s in train_pool if s.kind == "failure"]
    random.Random(seed).shuffle(failures)
    examples = sft_examples(failures, ("predictor",))[: args.max_train]
    cfg = TrainConfig(
        views=("predictor",),
        epochs=args.epochs,
        lr=args.lr,
        rank=args.rank,
        alpha=2 * args.rank,
        seed=seed,
        threads=args.threads,  # training sets the process's torch threads: the same number as inference
    )
    result = train_adapter(examples, cfg, cache / "adapters" / f"{tag}-seed-{seed}")
    name = model.load_adapter(result.adapter_dir, name=f"bench-{tag}-seed-{seed}", activate=False)
    low = heldout_floor(heldout, similarity, runs)
    base_correct = {s.id for s in heldout if s.kind == "understood"}  # the cached base answers, judged
    tuned = evaluate(model, heldout, similarity, name, runs=runs, surprise=False, floor_of=low)
    tuned_correct = {s.id for s in heldout} - set(tuned.wrong)
    few = None
    if args.shots:
        shots = ShotRetriever(examples, train_pool, embed, k=args.shots)
        few = evaluate(model, heldout, similarity, None, runs=runs, shots=shots, surprise=False, floor_of=low)
    targets = {e.completion.split("\nREASON:")[0].strip() for e in examples}
    unseen = [s for s in heldout if " ".join(s.transition.description.split()) not in targets]
    return {
        "seed": seed,
        "train": len(examples),
        "heldout": len(heldout),
        "floor": low.accuracy,
        "floor_answer": low.answer,
        "base": len(base_correct) / len(heldout),
        "few-shot": None if few is None else few.predictor_accuracy,
        "adapter": tuned.predictor_accuracy,
        "unseen": f"{accuracy(unseen, base_correct)} -> {accuracy(unseen, tuned_correct)} (n={len(unseen)})",
        "train s": result.seconds,
        "tok/s": result.tokens_per_s,
        "eval s": tuned.seconds,
    }


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def print_seeds(split: str, results: list[dict]) -> None:
    print(f"\n{split}: per seed")
    headers = ["seed", "train", "held-out", "floor", "floor answer", "base", "few-shot", "adapter"]
    headers += ["unseen: base -> adapter", "train s", "tok/s", "eval s"]
    rows = [
        [r["seed"], r["train"], r["heldout"], _num(r["floor"]), r["floor_answer"], _num(r["base"])]
        + [_num(r["few-shot"]), _num(r["adapter"]), r["unseen"]]
        + [f"{r['train s']:.0f}", f"{r['tok/s']:.0f}", f"{r['eval s']:.0f}"]
        for r in results
    ]
    print_table(headers, rows)


def print_summary(split: str, results: list[dict]) -> None:
    """Floor, base, few-shot and adapter side by side: mean ± sd over seeds, and each one's gain over the floor."""
    seeds = ",".join(str(r["seed"]) for r in results)
    held = "/".join(str(r["heldout"]) for r in results)
    print(f"\n{split}: mean ± sd over seeds {seeds} (held-out transitions per seed: {held})")
    rows = []
    for col in ("floor", "base", "few-shot", "adapter"):
        values = [r[col] for r in results if r[col] is not None]
        if not values:
            rows.append([col, "-", "-"])
            continue
        gains = [r[col] - r["floor"] for r in results if r[col] is not None]
        rows.append(
            [col, spread(values, 2, sample=True), "" if col == "floor" else spread(gains, 2, signed=True, sample=True)]
        )
    print_table(["split: " + split, "held-out accuracy", "gain over the floor"], rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0", help="page splits and training seeds, e.g. 0,1,2")
    p.add_argument("--sites", default="shop,forum", help="bundled sites to crawl (two or more: leave-one-site-out)")
    p.add_argument("--crawl", default="bfs-click:200,random:250", help="strategy:actions per site")
    p.add_argument("--heldout-share", type=float, default=0.3)
    p.add_argument("--max-train", type=int, default=40, help="failure samples trained on, at most")
    p.add_argument("--max-heldout", type=int, default=40, help="held-out transitions evaluated, at most")
    p.add_argument("--epochs", type=float, default=2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--shots", type=int, default=2, help="retrieved demonstrations for the base model (0: skip)")
    p.add_argument("--no-loso", action="store_true", help="skip leave-one-site-out")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all; 1 on a shared machine)")
    p.add_argument("--cache", default="/tmp/scalehop-bench-training")
    args = p.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sites = [s for s in args.sites.split(",") if s]
    steps = {k: int(v) for k, v in (x.split(":") for x in args.crawl.split(","))}
    seeds = [int(x) for x in args.seeds.split(",")]
    t_all = time.perf_counter()

    model = load_model(ModelConfig(threads=args.threads))
    embedder = Embedder()
    similarity = embedder.similarity
    distinct, every = transitions(cache, sites, steps)
    runs = run_cases(every)  # every page each crawl saw: the Judger's pages, the floor's constants
    samples, label_s = label(model, distinct, similarity, runs, cache)
    by_site = defaultdict(list)
    for s in samples:
        by_site[s.site.name].append(s)
    counts = ", ".join(f"{n}: {len(v)} ({sum(s.kind == 'explore' for s in v)} wrong)" for n, v in by_site.items())
    print(f"{len(samples)} transitions of {len(by_site)} sites, mispredicted by the base model: {counts}")
    print(f"(labelling {label_s:.0f} s)")

    # finished splits are kept (per split, seed and settings): an interrupted run picks up where it stopped
    settings = {k: v for k, v in vars(args).items() if k not in ("seeds", "cache", "threads", "no_loso")}
    done_path = cache / "results.json"
    done = json.loads(done_path.read_text()) if done_path.exists() else {}
    results: dict[str, list[dict]] = defaultdict(list)

    def run_split(split: str, tag: str, train_pool, heldout, seed: int) -> None:
        key = json.dumps({"split": split, "seed": seed, **settings}, sort_keys=True)
        if key not in done:
            done[key] = one_split(model, similarity, embedder.embed, runs, train_pool, heldout, seed, tag, args, cache)
            done_path.write_text(json.dumps(done, indent=1))
        results[split].append(done[key])
        print(split, json.dumps(done[key]), file=sys.stderr, flush=True)  # progress; the tables come at the end

    for seed in seeds:
        train_pages, heldout = split_by_page(samples, args.heldout_share, seed=seed)
        heldout = random.Random(seed).sample(heldout, min(args.max_heldout, len(heldout)))  # of every site
        run_split(PAGE_SPLIT, "pages", train_pages, heldout, seed)
        if len(by_site) >= 2 and not args.no_loso:
            for site, held in by_site.items():
                others = [s for s in samples if s.site.name != site]
                held = random.Random(seed).sample(held, min(args.max_heldout, len(held)))
                run_split(f"leave-one-site-out: held out {site}", f"loso-{site}", others, held, seed)

    for split, rs in results.items():
        print_seeds(split, rs)
    for split, rs in results.items():
        print_summary(split, rs)
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
