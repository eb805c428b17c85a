"""Task success on the bundled suites and MiniWoB++: SR, AS and tokens per trajectory for the floors (random, and
the ranker: the element closest to the task, no model), the Actor zero-shot and few-shot, the world-model policy
and the adaptive one, side by side in one run.

Bundled: the `test` split of each site's suite (the first --per-site tasks of it, or with --mixed in turn from each
category), each task graded by its own check. MiniWoB++: --episodes seeded episodes of each task type in
--miniwob. Every policy runs over --seeds: the random policy and the world model's tie-breaks use the seed,
MiniWoB episodes start at it; the Actor decodes greedily, so on the bundled suites its seeds differ only by
timing. Few-shot demonstrations come from a dataset built (once, cached) from random-walk explorations of the
three bundled sites, not from the tasks.

Results are cached per (policy, target, seed) under --cache, and each evaluation resumes where it stopped.

    .venv/bin/python bench/eval.py                          # the README's numbers (long on a CPU)
    .venv/bin/python bench/eval.py --per-site 2 --miniwob click-button --episodes 2 --policies random,zero-shot
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import print_table  # noqa: E402
from evals.harness import run_eval  # noqa: E402
from evals.miniwob import MiniWoBServer  # noqa: E402
from evals.policies import FLOORS, POLICIES, make_policy  # noqa: E402
from evals.results import EvalRun, score  # noqa: E402
from evals.suites import load_suite  # noqa: E402
from evals.targets import miniwob_episodes, web_episodes  # noqa: E402
from explorer.config import BrowserConfig, ExploreConfig  # noqa: E402
from flows.demo import bundled_site_configs  # noqa: E402
from sites import serve_sites  # noqa: E402

SITES = ("shop", "forum", "classifieds")
# few-shot: the Actor with demonstrations
ROWS = ("random", "ranker", "zero-shot", "few-shot", "world-model", "adaptive")
# MiniWoB++ types on which a random policy scored 0 of 3 episodes (`scalehop eval miniwob --policy random
# --episodes 3 --max-steps 6`): a type the floor passes measures nothing (click-button, focus-text: 3 of 3). Later
# seeds (1, 2; 4 steps) passed click-widget, click-checkboxes and click-test-transfer by chance: read SR against
# the random row of the same run, never against zero
ZERO_FLOOR = ("click-test-transfer", "click-widget", "choose-list", "click-checkboxes", "enter-text", "login-user")


def test_tasks(urls: dict[str, str], per_site: int, mixed: bool = False) -> list:
    """The first `per_site` tasks of each bundled site's `test` split. The split lists its navigation tasks first;
    `mixed` takes the tasks in turn from each category (navigation, search, form, info, multi-step)."""
    out = []
    for i, name in enumerate(SITES):
        tasks = load_suite(f"bundled:{name}:test", urls)
        if mixed:  # each site starts at a different category, so fewer than 5 a site still cover them all
            groups: dict[str, list] = {}
            for task in tasks:
                groups.setdefault(task.category, []).append(task)
            turn = list(groups.values())
            turn = turn[i % len(turn) :] + turn[: i % len(turn)]
            tasks = [t for row in itertools.zip_longest(*turn) for t in row if t is not None]
        out += tasks[:per_site]
    return out


def mixed_tag(target: str, mixed: bool) -> str:
    """The suffix of an evaluation folder whose bundled tasks were taken --mixed (a different task set, same size)."""
    return "-mixed" if mixed and target == "bundled" else ""


def task_set(per_site: int, mixed: bool, n: int) -> str:
    """The bundled column's task set in words, for a table's footer."""
    order = "in turn from each category" if mixed else "first of the split: navigation"
    return f"test split, {per_site} tasks of each site ({order}; {n} tasks)"


def demo_dataset(cache: Path, sites) -> Path:
    """A dataset of random-walk explorations of the bundled sites (built once): the few-shot pool."""
    from explorer.models import ModelConfig
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe
    from training.improve import explore_sites

    out = cache / "dataset"
    if (out / "hf").is_dir():
        return out
    walk = ExploreConfig(strategy="random", max_steps=40, seed=0)
    runs = asyncio.run(explore_sites(list(sites), cache / "explore", walk, BrowserConfig(), ModelConfig()))
    build_dataset(runs, load_recipe("quick"), out)
    return out


def target_episodes(target: str, tasks, sites, similarity, mw, miniwob: str, episodes: int, seed: int):
    """The episodes of a table column: the bundled test tasks, or seeded MiniWoB++ episodes (seed * 1000 on)."""
    if target == "bundled":
        return web_episodes(tasks, sites, similarity)
    return miniwob_episodes(mw, miniwob, episodes, seed=seed * 1000)


def evaluate(episodes, policy, folder: Path, row: str, target: str, seed: int, max_steps: int, adapter=None):
    """One evaluation, cached and resumable in `folder`: (Score, seconds)."""
    run = EvalRun(
        eval_id=folder.name,
        suite=target,
        policy=row,
        model=None if row in FLOORS else "smollm2-135m",
        adapter=None if adapter is None else str(adapter),
        max_steps=max_steps,
        seed=seed,
        task_ids=[e.task_id for e in episodes],
    )
    t0 = time.perf_counter()
    results = asyncio.run(run_eval(episodes, policy, folder, run, BrowserConfig()))
    return score(results), time.perf_counter() - t0


def policy_for(row: str, model, similarity, shots, seed: int):
    """The policy of a table row."""
    name = {"zero-shot": "actor", "few-shot": "actor"}.get(row, row)
    return make_policy(name, model, similarity, shots if row == "few-shot" else None, seed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policies", default=",".join(ROWS), help=f"rows to run: {', '.join(ROWS)}")
    p.add_argument("--seeds", default="0,1", help="seeds, e.g. 0,1,2")
    p.add_argument("--per-site", type=int, default=4, help="tasks of each site's test split")
    p.add_argument("--mixed", action="store_true", help="take them in turn from each category (default: the first)")
    p.add_argument("--miniwob", default=",".join(ZERO_FLOOR), help="MiniWoB++ task types")
    p.add_argument("--episodes", type=int, default=2, help="MiniWoB++ episodes per task type and seed")
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--shots", type=int, default=2)
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all; 1 on a shared machine)")
    p.add_argument("--cache", default="/tmp/scalehop-bench-eval")
    args = p.parse_args()
    rows = [r.strip() for r in args.policies.split(",")]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        p.error(f"unknown rows {unknown}: use {', '.join(ROWS)} (policies: {', '.join(POLICIES)})")
    seeds = [int(s) for s in args.seeds.split(",")]
    cache = Path(args.cache)
    servers = serve_sites(port=0, slow_seconds=5)
    model = similarity = shots = None
    table = []
    try:
        sites = {c.name: c for c in bundled_site_configs(servers.urls)}
        urls = {n: s.start_url for n, s in sites.items()}
        tasks = test_tasks(urls, args.per_site, args.mixed)
        if any(r not in FLOORS for r in rows):
            from explorer.models import Embedder, ModelConfig, load_model

            model, similarity = load_model(ModelConfig(threads=args.threads)), Embedder().similarity
        if "few-shot" in rows:
            from evals.shots import ShotRetriever

            shots = ShotRetriever.from_dataset(demo_dataset(cache, sites.values()), k=args.shots)
        with MiniWoBServer() as mw:
            for row in rows:
                for target in ("bundled", "miniwob"):
                    per_seed = []
                    for seed in seeds:
                        episodes = target_episodes(
                            target, tasks, sites, similarity, mw, args.miniwob, args.episodes, seed
                        )
                        policy = policy_for(row, model, similarity, shots, seed)
                        tag = mixed_tag(target, args.mixed)
                        folder = cache / "evals" / f"{row}-{target}-seed{seed}-steps{args.max_steps}{tag}"
                        per_seed.append(evaluate(episodes, policy, folder, row, target, seed, args.max_steps))
                    table.append(_row(row, target, per_seed))
                    print(f"{row} {target}: {table[-1]}", file=sys.stderr, flush=True)
    finally:
        servers.stop()
    print(
        f"\nbundled: {task_set(args.per_site, args.mixed, len(tasks))}; MiniWoB++: "
        f"{args.miniwob} x {args.episodes} episodes; max {args.max_steps} steps; seeds {args.seeds}\n"
    )
    print_table(["policy", "target", "tasks", "SR mean", "SR sd", "AS", "AS (ok)", "tokens/traj", "fallback"], table)


def _row(name: str, target: str, per_seed) -> list:
    """A table row: SR mean and spread over seeds, AS, tokens per trajectory and fallback rate (means)."""
    srs = [s.sr for s, _ in per_seed]
    ok = [s.avg_steps_success for s, _ in per_seed if s.avg_steps_success is not None]
    return [
        name,
        target,
        per_seed[0][0].n,
        f"{statistics.fmean(srs):.3f}",
        f"{statistics.pstdev(srs):.3f}",
        f"{statistics.fmean(s.avg_steps for s, _ in per_seed):.2f}",
        f"{statistics.fmean(ok):.2f}" if ok else "-",
        f"{statistics.fmean(s.tokens_per_trajectory for s, _ in per_seed):.0f}",
        f"{statistics.fmean(s.fallback_rate for s, _ in per_seed):.3f}",
    ]


if __name__ == "__main__":
    main()
