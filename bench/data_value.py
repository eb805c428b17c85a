"""What a strategy's data is worth (after SCALE's ablation): the task success of an Actor trained on each
exploration strategy's data, next to the base Actor zero-shot and few-shot, over seeds.

For every seed and strategy (scale, greedy, random, bfs): explore each bundled site with the same step budget,
build the dataset of those runs (reverse construction, the `quick` recipe), train one Actor adapter on it (the
same TrainConfig and seed for every strategy), then run the Actor with it on the bundled `test` split (the first
--per-site tasks of each site, or with --mixed in turn from each category) and on MiniWoB++ episodes of the types
a random policy never passes. Zero-shot is the base Actor; few-shot the base Actor with demonstrations retrieved
from a random-walk dataset (bench/eval.py's pool). The floors run on the same tasks and episodes at every seed: a
trained Actor's gain counts above them. A second table says, per policy, which bundled tasks it completed in each
category and what it did (clicks, typing, selections, answers: what tasks beyond navigation need). Explorations,
datasets, adapters and evaluations are cached per (strategy, seed) under --cache/DTYPE and resume.

The model runs in float32 unless --dtype says otherwise, on every machine: the embedded model's greedy answers
differ between float32 and bfloat16 (zero-shot completed 1 of the 6 tasks in bfloat16 on an AMX machine, 2 in
float32), so `auto` would make rows from different machines incomparable.

    .venv/bin/python bench/data_value.py                                  # the README's table (hours on a CPU)
    .venv/bin/python bench/data_value.py --seeds 0 --strategies greedy --steps 10 --per-site 1 --episodes 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import print_table, spread  # noqa: E402
from bench.eval import (  # noqa: E402
    ZERO_FLOOR,
    demo_dataset,
    evaluate,
    mixed_tag,
    policy_for,
    target_episodes,
    task_set,
    test_tasks,
)
from evals.miniwob import MiniWoBServer  # noqa: E402
from explorer.config import BrowserConfig, ExploreConfig  # noqa: E402
from explorer.models import ModelConfig  # noqa: E402
from flows.demo import bundled_site_configs  # noqa: E402
from sites import serve_sites  # noqa: E402
from training.config import TrainConfig  # noqa: E402

STRATEGIES = ("scale", "greedy", "random", "bfs")
TARGETS = ("bundled", "miniwob")
FLOOR_ROWS = ("random", "ranker")  # no model: the know-nothing floor, and the closest element to the task


def strategy_data(
    strategy: str, seed: int, steps: int, sites, cache: Path, model: ModelConfig, probes: int = 0
) -> tuple[Path, int]:
    """Explore every site with `strategy` (`steps` actions each, the first `probes` of them search probes where
    the site has a search field) and build the dataset of those runs (cached): (the dataset folder, states found
    over the sites)."""
    from explorer.store import RunStore
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe
    from training.improve import explore_sites

    name = f"{strategy}-seed{seed}-steps{steps}" + (f"-probes{probes}" if probes else "")
    cfg = ExploreConfig(
        strategy=strategy,
        max_steps=steps,
        steps_per_hop=5,
        stall_steps=2,
        verify_actions=1,
        search_probes=probes,
        seed=seed,
    )
    runs = asyncio.run(explore_sites(list(sites), cache / "explore" / name, cfg, BrowserConfig(), model))
    out = cache / "datasets" / name
    if not (out / "stats.json").is_file():
        build_dataset(runs, load_recipe("quick"), out)
    states = sum(len(RunStore(r).load_nodes()) for r in runs)
    return out, states


def actor_adapter(dataset: Path, cfg: TrainConfig, out: Path) -> int:
    """Train the Actor view of `dataset` into `out` (cached); the number of Actor examples."""
    import json

    from training.views import train_on_datasets

    if not (out / "adapter_model.safetensors").is_file():
        train_on_datasets([dataset], cfg, out)
    return json.loads((out / "card.json").read_text())["counts"]["actor_examples"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--steps", type=int, default=30, help="exploration actions per site (every strategy)")
    p.add_argument("--per-site", type=int, default=3, help="tasks of each site's test split")
    p.add_argument("--mixed", action="store_true", help="take them in turn from each category (default: the first)")
    p.add_argument("--miniwob", default=",".join(ZERO_FLOOR), help="MiniWoB++ task types")
    p.add_argument("--episodes", type=int, default=1, help="MiniWoB++ episodes per type and seed")
    p.add_argument("--max-steps", type=int, default=6, help="actions per task")
    p.add_argument(
        "--search-probes", type=int, default=0, help="of the exploration steps, search probes first (ExploreConfig)"
    )
    p.add_argument("--train-steps", type=int, default=40, help="optimizer steps of each Actor adapter")
    p.add_argument("--shots", type=int, default=2)
    p.add_argument("--cache", default="/tmp/scalehop-bench-data-value")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="the model's dtype")
    p.add_argument(
        "--action-weights",
        default="",
        help="repeat the Actor examples of these actions, e.g. type=4,select=4,answer=4 (TrainConfig.action_weights)",
    )
    args = p.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",")]
    if unknown := [s for s in strategies if s not in STRATEGIES]:
        p.error(f"unknown strategies {unknown}: use {', '.join(STRATEGIES)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    try:
        pairs = (kv.split("=") for kv in args.action_weights.split(",") if kv)
        action_weights = {k.strip(): float(v) for k, v in pairs}
        TrainConfig(action_weights=action_weights)
    except ValueError as exc:  # a malformed pair, a number that is not one, an unknown action (pydantic)
        p.error(f"--action-weights {args.action_weights!r}: give action=weight pairs, e.g. type=4,answer=4 ({exc})")
    # adapters (and their evals) are cached by what trains them: steps and action weights
    if not 0 <= args.search_probes < args.steps:
        p.error(f"--search-probes {args.search_probes}: give 0 to --steps - 1 ({args.steps - 1}; a start step is one)")
    probes_tag = f"-probes{args.search_probes}" if args.search_probes else ""
    weights_tag = f"{probes_tag}-train{args.train_steps}" + "".join(
        f"-{k}{v:g}" for k, v in sorted(action_weights.items())
    )
    cache = Path(args.cache) / args.dtype
    from evals.shots import ShotRetriever
    from explorer.models import Embedder, load_model

    model_cfg = ModelConfig(dtype=args.dtype)
    model, similarity = load_model(model_cfg), Embedder().similarity
    scores: dict[tuple[str, str], list[float]] = {}
    results: dict[str, list] = {}  # label -> bundled task results over the seeds
    examples: dict[str, list[int]] = {}
    states: dict[str, list[int]] = {}
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        sites = {c.name: c for c in bundled_site_configs(servers.urls)}
        urls = {n: s.start_url for n, s in sites.items()}
        tasks = test_tasks(urls, args.per_site, args.mixed)
        shots = ShotRetriever.from_dataset(demo_dataset(cache, sites.values()), k=args.shots)
        with MiniWoBServer() as mw:

            def run(row: str, seed: int, label: str, adapter: Path | None = None) -> None:
                for target in TARGETS:
                    episodes = target_episodes(target, tasks, sites, similarity, mw, args.miniwob, args.episodes, seed)
                    policy = policy_for(row, model, similarity, shots, seed)
                    tag = mixed_tag(target, args.mixed)
                    name = f"{label}-{target}-seed{seed}-steps{args.max_steps}-n{len(episodes)}{tag}"
                    name += weights_tag if adapter is not None else ""
                    folder = cache / "evals" / name
                    sc, _ = evaluate(episodes, policy, folder, row, target, seed, args.max_steps, adapter)
                    scores.setdefault((label, target), []).append(sc.sr)
                    if target == "bundled":
                        results.setdefault(label, []).extend(load_results(folder, episodes))
                    print(f"seed {seed} {label} {target}: SR {sc.sr:.3f} ({sc.n})", file=sys.stderr, flush=True)

            for seed in seeds:
                for floor in FLOOR_ROWS:
                    run(floor, seed, floor)
                run("zero-shot", seed, "zero-shot")
                run("few-shot", seed, "few-shot")
                cfg = TrainConfig(
                    views=("actor",), max_steps=args.train_steps, batch_size=4, seed=seed, action_weights=action_weights
                )
                for strategy in strategies:
                    dataset, found = strategy_data(
                        strategy, seed, args.steps, sites.values(), cache, model_cfg, args.search_probes
                    )
                    folder = cache / "adapters" / f"{strategy}-seed{seed}-steps{args.steps}{weights_tag}"
                    examples.setdefault(strategy, []).append(actor_adapter(dataset, cfg, folder))
                    states.setdefault(strategy, []).append(found)
                    model.set_adapter(model.load_adapter(folder, name=folder.name, activate=False))
                    try:
                        run("zero-shot", seed, f"actor on {strategy} data", folder)
                    finally:
                        model.set_adapter(None)
    finally:
        servers.stop()
    print(
        f"\nbundled: {task_set(args.per_site, args.mixed, len(tasks))}; MiniWoB++: "
        f"{args.miniwob} x {args.episodes} episodes; max {args.max_steps} steps; exploration {args.steps} steps per"
        f" site ({args.search_probes} of them search probes); Actor adapters {weights_tag.replace('-', ' ').strip()}; "
        f"seeds {args.seeds}; model {args.dtype}\n"
    )
    labels = [*FLOOR_ROWS, "zero-shot", "few-shot", *(f"actor on {s} data" for s in strategies)]
    rows = []
    for label in labels:
        strategy = label.removeprefix("actor on ").removesuffix(" data") if label.startswith("actor on ") else None
        cells = [label, _mean(states.get(strategy)), _mean(examples.get(strategy))]
        for target in TARGETS:
            cells.append(spread(scores.get((label, target), [])))
        ranker = scores.get(("ranker", "bundled"), [])
        srs = scores.get((label, "bundled"), [])
        gains = [a - b for a, b in zip(srs, ranker, strict=False)] if label not in FLOOR_ROWS else []
        rows.append([*cells[:4], spread(gains, signed=True), cells[4]])
    headers = ["policy", "states found", "actor examples", "bundled SR (mean ± sd)", "bundled SR − ranker, per seed"]
    print_table([*headers, "MiniWoB++ SR"], rows)
    print()
    print_table(*behaviour_table(labels, results, {str(t.task_id): getattr(t, "category", "?") for t in tasks}))


def load_results(folder: Path, episodes) -> list:
    """The task results an evaluation left in `folder`, in episode order."""
    from evals.results import TaskResult, result_path

    return [TaskResult.load(p) for e in episodes if (p := result_path(folder, e.task_id)).exists()]


def behaviour_table(labels: list[str], results: dict[str, list], category: dict[str, str]):
    """(headers, rows): per policy, the bundled tasks completed in each category over the seeds, which ones, and
    what its actions were (typing, selecting, answering: what tasks beyond navigation need)."""
    from collections import Counter

    from evals.suites import CATEGORIES

    headers = ["policy", *CATEGORIES, "completed", "clicks / types / selects / answers"]
    rows = []
    for label in labels:
        done = Counter(category.get(r.task_id, "?") for r in results.get(label, []) if r.success)
        seen = Counter(category.get(r.task_id, "?") for r in results.get(label, []))
        actions = Counter(
            "answer" if s.action.kind == "stop" and s.action.answer else s.action.kind
            for r in results.get(label, [])
            for s in r.trajectory
        )
        ids = sorted({r.task_id for r in results.get(label, []) if r.success})
        kinds = " / ".join(str(actions[k]) for k in ("click", "type", "select", "answer"))
        rows.append([label, *(f"{done[c]}/{seen[c]}" for c in CATEGORIES), ", ".join(ids) or "-", kinds])
    return headers, rows


def _mean(values: list[int] | None) -> str:
    return f"{statistics.fmean(values):.0f}" if values else "-"


if __name__ == "__main__":
    main()
