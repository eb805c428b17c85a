"""Task success in a round: the Actor, with the current model and with the candidate, on the same dev tasks.

The tasks are the improve run's `dev` material: the bundled suite's `dev` split of each improved site that has
one (`bundled:<site>:dev`), WebArena-format task files, and MiniWoB++ task types; the `test` split stays for
reports. Each evaluation is a normal evaluation folder (`evals.harness.run_eval`: crash-safe, resumable), under
`<improve run>/evals/round-<k>/<before|after>/<target>/`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.results import EvalRun, TaskResult
from explorer.config import BrowserConfig, SiteConfig
from explorer.errors import ConfigError


class TaskEvalConfig(BaseModel):
    """The tasks a round is gated on and how they run (the Actor, greedy, `max_steps` actions)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suites: tuple[str, ...] = ()  # bundled:<site>:<split> or task files; empty: bundled:<site>:<split> per site
    split: Literal["dev", "test"] = "dev"  # the bundled split used when `suites` is empty (reports use test)
    limit: int | None = Field(6, gt=0)  # the first N tasks of each suite (None: all)
    miniwob: tuple[str, ...] = ()  # MiniWoB++ task types
    episodes: int = Field(2, gt=0)  # MiniWoB++ episodes per type
    max_steps: int = Field(6, gt=0)
    seed: int = 0

    def targets(self, sites: Sequence[SiteConfig]) -> list[str]:
        """The suites this config runs on `sites` (and `miniwob:<types>` last)."""
        from evals.suites import SITE_NAMES

        suites = list(self.suites) or [f"bundled:{s.name}:{self.split}" for s in sites if s.name in SITE_NAMES]
        return suites + ([f"miniwob:{','.join(self.miniwob)}"] if self.miniwob else [])


def target_episodes(target: str, cfg: TaskEvalConfig, sites: Sequence[SiteConfig], stack: contextlib.ExitStack):
    """The harness's episodes of one target (a MiniWoB++ server is started on `stack` when needed)."""
    from evals.miniwob import MiniWoBServer
    from evals.suites import load_suite
    from evals.targets import file_tasks, miniwob_episodes, split_spec, web_episodes

    kind, name, _ = split_spec(target)
    if kind == "miniwob":
        return miniwob_episodes(stack.enter_context(MiniWoBServer()), name, cfg.episodes, cfg.seed)
    by_name = {s.name: s for s in sites}
    if kind == "bundled":
        if name not in by_name:
            raise ConfigError(f"task suite {target}: the improve run has no site named {name!r} ({sorted(by_name)})")
        tasks = load_suite(target, {n: s.start_url for n, s in by_name.items()})
    else:
        tasks = file_tasks(name, by_name)
    return web_episodes(tasks[: cfg.limit], by_name, None)


def evaluate_tasks(
    model,
    adapter: Path | None,
    cfg: TaskEvalConfig,
    sites: Sequence[SiteConfig],
    folder: Path,
    browser: BrowserConfig | None = None,
    policy: str = "actor",
) -> list[TaskResult]:
    """`policy` (the Actor; `random`, `ranker`: the floors, no model) on every target with `adapter` loaded (None:
    the base model); results of all targets in order. Call from synchronous code (the harness runs its own event
    loop)."""
    if model is None:
        return _run_targets(None, None, cfg, sites, folder, browser, policy)
    previous = model.adapter_id
    name = None if adapter is None else model.load_adapter(adapter, name=Path(adapter).name, activate=False)
    model.set_adapter(name)
    try:
        return _run_targets(model, adapter, cfg, sites, folder, browser, policy)
    finally:
        model.set_adapter(previous)


def _run_targets(model, adapter, cfg, sites, folder, browser, policy) -> list[TaskResult]:
    """Every target of `cfg`, each into its own evaluation folder under `folder`."""
    from evals.harness import run_eval
    from evals.policies import make_policy

    out: list[TaskResult] = []
    with contextlib.ExitStack() as stack:
        for target in cfg.targets(sites):
            episodes = target_episodes(target, cfg, sites, stack)
            where = folder / target.replace(":", "-").replace("/", "_")
            run = EvalRun(
                eval_id=where.name,
                suite=target,
                policy=policy,
                model=None if model is None else getattr(model, "model_id", None),
                adapter=None if adapter is None else str(adapter),
                max_steps=cfg.max_steps,
                seed=cfg.seed,
                task_ids=[e.task_id for e in episodes],
            )
            chosen = make_policy(policy, model, None, seed=cfg.seed)
            out += asyncio.run(run_eval(episodes, chosen, where, run, browser or BrowserConfig()))
    return out
