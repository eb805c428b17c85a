"""`scalehop eval TASKS|bundled:<site>[:<split>]|miniwob[:<task,...>]`: success rate (SR) and average steps (AS)
of a policy on tasks, each graded by its own check, in real Chromium."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from pathlib import Path

from explorer.config import BrowserConfig
from explorer.errors import ConfigError, SiteUnreachable

POLICIES = ("actor", "world-model", "adaptive", "random", "ranker")  # evals.policies.POLICIES, not imported here
FLOORS = ("random", "ranker")  # evals.policies.FLOORS: no model


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `eval` verb."""
    from flows.cli import model_args

    p = sub.add_parser("eval", help="task success of an agent: SR and AS on task files, bundled suites, MiniWoB++")
    p.add_argument(
        "target", help="a WebArena-format task file (.json), bundled:<site>[:<split>], or miniwob[:<task,...>]"
    )
    p.add_argument(
        "--site",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="a site of the tasks (URL or site config); repeat per site",
    )
    p.add_argument(
        "--policy",
        choices=POLICIES,
        default="actor",
        help="actor, world-model, adaptive; or a floor: random, or ranker (the element closest to the task)",
    )
    model_args(p)
    p.add_argument("--adapters", help="comma-separated adapters to compare side by side (base: the base model)")
    p.add_argument("--max-steps", type=int, default=15, help="actions per task before it counts as failed")
    p.add_argument("--episodes", type=int, default=3, help="MiniWoB++: seeded episodes per task type")
    p.add_argument("--tasks", help="only these task ids (comma-separated)")
    p.add_argument("--limit", type=int, help="only the first N tasks")
    p.add_argument("--shots", type=int, default=0, help="few-shot: demonstrations retrieved per step from --dataset")
    p.add_argument("--dataset", help="a dataset folder from `scalehop dataset build` (the few-shot demonstrations)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out", help="the evaluation folder (default: runs/evals/<time>-<target>-<policy>); reuse to resume"
    )
    p.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    p.add_argument("--json", action="store_true", help="last line: a JSON summary (sr, avg_steps, tasks, by_adapter)")
    p.set_defaults(handler=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    from evals.results import score

    if args.shots and not args.dataset:
        raise ConfigError("--shots needs --dataset: a dataset folder built by `scalehop dataset build`")
    if args.dataset and not args.shots:
        raise ConfigError(f"--dataset {args.dataset} needs --shots N: the demonstrations retrieved per step")
    if args.max_steps < 1:
        raise ConfigError(f"--max-steps {args.max_steps}: allow at least one action")
    adapters = [a.strip() for a in args.adapters.split(",")] if args.adapters else [args.adapter]
    out = Path(args.out or f"runs/evals/{time.strftime('%Y%m%d-%H%M%S')}-{_slug(args.target)}-{args.policy}")
    created = not out.exists()
    try:
        by_adapter = asyncio.run(_evaluate(args, adapters, out))
    except SiteUnreachable:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # --adapters: each adapter's folder went away with its empty evaluation
        raise
    for name, results in by_adapter.items():
        if len(by_adapter) > 1:
            print(f"\n== {name} ==")
        if not args.json:
            for r in results:
                print(f"{'PASS' if r.success else 'fail'}  {r.task_id:28s} {r.steps:2d} steps  {r.reason[:90]}")
    table = {name: score(results) for name, results in by_adapter.items()}
    print(f"\n{'model':24s} {'tasks':>5s} {'SR':>6s} {'AS':>6s} {'AS(ok)':>7s} {'tok/traj':>9s} {'fallback':>8s}")
    for name, s in table.items():
        ok = "-" if s.avg_steps_success is None else f"{s.avg_steps_success:.1f}"
        print(
            f"{name:24s} {s.n:5d} {s.sr:6.3f} {s.avg_steps:6.2f} {ok:>7s} {s.tokens_per_trajectory:9.0f}"
            f" {s.fallback_rate:8.3f}"
        )
    print(f"results: {out}")
    if args.json:
        first = next(iter(by_adapter))
        summary = _json(by_adapter[first], table[first])
        if len(by_adapter) > 1:
            summary["by_adapter"] = {name: _json(by_adapter[name], table[name]) for name in by_adapter}
        print(json.dumps(summary))
    return 0


def _json(results, s) -> dict:
    return {"sr": s.sr, "avg_steps": s.avg_steps, "tasks": [r.brief() for r in results]}


async def _evaluate(args: argparse.Namespace, adapters: list[str | None], out: Path) -> dict:
    """Run the target with each adapter; returns `adapter name -> results`."""
    from evals.harness import check_run, run_eval
    from evals.results import EvalRun
    from evals.targets import split_spec

    kind, name, split = split_spec(args.target)
    browser = BrowserConfig(executable=args.chromium)
    by_adapter = {}
    with _episodes(args, kind, name, split) as every:
        episodes = _chosen(every, args)
        runs = {}
        for adapter in adapters:  # every folder is checked before any model loads
            folder = out / _adapter_name(adapter) if len(adapters) > 1 else out
            runs[adapter] = (
                folder,
                EvalRun(
                    eval_id=folder.name,
                    suite=args.target,
                    policy=args.policy,
                    model=None if args.policy in FLOORS else args.model,
                    adapter=adapter,
                    max_steps=args.max_steps,
                    seed=args.seed,
                    shots=args.shots,
                    dataset=str(Path(args.dataset).resolve()) if args.dataset else None,
                    task_ids=[e.task_id for e in episodes],
                ),
            )
            check_run(*runs[adapter])
        for adapter, (folder, run) in runs.items():
            policy = _policy(args, adapter)
            by_adapter[_adapter_name(adapter)] = await run_eval(episodes, policy, folder, run, browser)
    return by_adapter


@contextlib.contextmanager
def _episodes(args: argparse.Namespace, kind: str, name: str | None, split: str | None):
    """The target's episodes, with the servers they need (bundled sites, the MiniWoB++ server) running."""
    from evals.targets import file_tasks, miniwob_episodes, site_configs, web_episodes

    similarity = None  # the evaluators load the embedder only when a task uses fuzzy_match
    if kind == "miniwob":
        from evals.miniwob import MiniWoBServer

        with MiniWoBServer() as server:
            yield miniwob_episodes(server, name, args.episodes, args.seed)
        return
    sites = site_configs(args.site)
    servers = None
    try:
        if kind == "bundled":
            from evals.suites import load_suite
            from flows.demo import bundled_site_configs
            from sites import serve_sites

            if not sites:  # serve the bundled sites here, on free ports
                servers = serve_sites(port=0, slow_seconds=5)
                sites = {c.name: c for c in bundled_site_configs(servers.urls)}
            suite = f"bundled:{name}" + (f":{split}" if split else "")
            tasks = load_suite(suite, {n: s.start_url for n, s in sites.items()})
        else:
            tasks = file_tasks(name, sites)
        yield web_episodes(tasks, sites, similarity)
    finally:
        if servers is not None:
            servers.stop()


def _chosen(episodes: list, args: argparse.Namespace) -> list:
    """The episodes `--tasks` and `--limit` keep (an id that matches nothing is an error)."""
    if args.tasks:
        wanted = [t.strip() for t in args.tasks.split(",") if t.strip()]
        known = {e.task_id for e in episodes}
        missing = [t for t in wanted if t not in known]
        if missing:
            raise ConfigError(f"--tasks: no task {missing} in {args.target}")
        episodes = [e for e in episodes if e.task_id in wanted]
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError(f"--limit {args.limit}: keep at least one task")
        episodes = episodes[: args.limit]
    return episodes


def _policy(args: argparse.Namespace, adapter: str | None):
    """The policy named by --policy, on the model (with `adapter`)."""
    from evals.policies import make_policy

    if args.policy in FLOORS:
        return make_policy(args.policy, None, None, seed=args.seed)
    from explorer.models import Embedder, load_model
    from flows.cli import model_config

    chosen = None if adapter in (None, "", "base") else adapter
    config = model_config(argparse.Namespace(**(vars(args) | {"adapter": chosen})))
    shots = None
    if args.shots:
        from evals.shots import ShotRetriever

        shots = ShotRetriever.from_dataset(args.dataset, k=args.shots)
    similarity = Embedder().similarity if args.policy != "actor" else None
    return make_policy(args.policy, load_model(config), similarity, shots, args.seed)


def _adapter_name(adapter: str | None) -> str:
    return "base" if adapter in (None, "", "base") else Path(adapter).name


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(text).stem)[:40] or "eval"
