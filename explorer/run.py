"""`scalehop explore`: run an exploration strategy on a site into a crash-safe run folder."""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
import time
import uuid
from functools import partial
from pathlib import Path

from explorer.baselines import bfs_click_worker, greedy_worker, random_worker
from explorer.browser import Chromium
from explorer.budget import Budget
from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.crawl import bfs_worker
from explorer.errors import ConfigError, SiteUnreachable
from explorer.loop import Engine, run_worker
from explorer.memory import TransitionMemory
from explorer.metrics import write_metrics
from explorer.models import ModelConfig
from explorer.probe import probe_searches
from explorer.roles.stats import merged_report
from explorer.rows import RunMeta
from explorer.store import RunStore, reopen, resume
from explorer.summary import RunSummary
from explorer.tracker import StateTracker

BASELINES = {"random": random_worker, "bfs": bfs_worker, "bfs-click": bfs_click_worker, "greedy": greedy_worker}


def new_run_id(strategy: str) -> str:
    """A sortable unique run id."""
    return time.strftime("%Y%m%d-%H%M%S") + f"-{strategy}-{uuid.uuid4().hex[:6]}"


def open_run(
    site: SiteConfig, cfg: ExploreConfig, runs_dir: str | Path, run_id: str | None, resume_run: str | None
) -> tuple[RunStore, StateTracker]:
    """A fresh run store, or a resumed one (its graph rebuilt from the store); with its tracker."""
    if resume_run:
        store, graph = resume(Path(runs_dir) / resume_run)
        kept = store.meta().strategy
        if kept is not None and kept != cfg.strategy:
            store.close()
            raise ConfigError(
                f"run {resume_run} in {runs_dir} was explored with strategy {kept!r}, not {cfg.strategy!r}: resume it"
                f" with --strategy {kept} (or start a new run for {cfg.strategy})"
            )
        store.set_meta("explore", cfg.model_dump(mode="json"))  # what the next resume starts from
    else:
        meta = {"site": site.model_dump(mode="json"), "explore": cfg.model_dump(mode="json")}
        store = RunStore.create(runs_dir, run_id or new_run_id(cfg.strategy), meta)
        graph = store.load_graph()
    tracker = StateTracker(
        store, graph, delta=cfg.delta, ignore_params=site.ignore_params, keep_fragment=site.keep_fragment
    )
    return store, tracker


def stored_config(runs_dir: str | Path, run_id: str) -> ExploreConfig | None:
    """The ExploreConfig run `run_id` in `runs_dir` last ran with (None for a run that did not keep one); a
    missing or unreadable run is a StoreError naming it."""
    store = reopen(Path(runs_dir) / run_id)  # the meta only: the graph is rebuilt when the run resumes
    try:
        return store.meta().explore
    finally:
        store.close()


async def _progress(cfg: ExploreConfig, tracker: StateTracker, budget: Budget) -> None:
    """A live progress line on stderr: steps, states, failures, tokens."""
    total = f"/{cfg.max_steps}" if cfg.max_steps else ""
    while True:
        failures = tracker.store.count_records("failure")
        sys.stderr.write(
            f"\r{cfg.strategy}: step {tracker.next_step}{total}  states {len(tracker.graph.g)}"
            f"  failures {failures}  tokens {budget.tokens()}  {budget.seconds():.0f}s "
        )
        sys.stderr.flush()
        await asyncio.sleep(1)


async def run_exploration(
    site: SiteConfig,
    cfg: ExploreConfig,
    browser: BrowserConfig,
    model_config: ModelConfig | None = None,
    *,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    resume_run: str | None = None,
) -> RunSummary:
    """Explore `site` with `cfg.strategy` until a budget ends (or Ctrl-C); returns the run's summary. A fresh run
    whose start URL cannot be reached raises SiteUnreachable and leaves no run folder behind; a resumed run whose
    steps are spent returns its summary as it is."""
    store, tracker = open_run(site, cfg, runs_dir, run_id, resume_run)
    rng = random.Random(f"{cfg.seed}:{tracker.next_step}")
    spent = Budget(cfg, tracker).exhausted()  # a resumed run that spent its steps loads no model, opens no browser
    model = batched = None
    if cfg.strategy == "scale" and spent is None:
        from explorer.models import Embedder, load_model

        model = load_model(model_config or ModelConfig())
        if cfg.contexts > 1 and hasattr(model, "generate_rows"):  # local: the contexts' calls share batches
            from explorer.models.batcher import BatchedModel

            model = batched = BatchedModel(model)
        similarity = Embedder().similarity
    budget = Budget(cfg, tracker, model)
    engine, empty = None, False
    tracker.accounting = partial(_accounting, store.meta(), tracker, budget, model, lambda: engine)
    try:
        if spent is None:
            async with await Chromium.launch(browser, site.allowed_origins) as chromium:
                sessions = [await chromium.new_session(site) for _ in range(cfg.contexts)]
                for session in sessions:  # the start URL answers, and the site's login steps run, before any step
                    await session.start()
                progress = asyncio.ensure_future(_progress(cfg, tracker, budget)) if sys.stderr.isatty() else None
                try:
                    if cfg.search_probes:  # before the strategy's steps, on the budget (resumed: the ones owed)
                        await probe_searches(site, tracker, budget, sessions[0], rng, cfg.search_probes)
                    if budget.exhausted() is None:  # the probes may have spent it: no worker's start step then
                        if cfg.strategy == "scale":
                            memory = TransitionMemory.from_records(store.records())
                            engine = Engine(
                                site, cfg, tracker, model, similarity, budget, store.dir.name, rng=rng, memory=memory
                            )
                            workers = [run_worker(engine, s) for s in sessions]
                        else:
                            worker = BASELINES[cfg.strategy]
                            workers = [worker(site, tracker, budget, s, rng) for s in sessions]
                        await asyncio.gather(*workers)
                except asyncio.CancelledError:
                    budget.stop("interrupted")
                finally:
                    if progress is not None:
                        progress.cancel()
                        sys.stderr.write("\n")
                for session in sessions:
                    await session.close()
    except SiteUnreachable:
        empty = resume_run is None and tracker.next_step == 0
        raise
    finally:
        if empty:
            store.close()
            shutil.rmtree(store.dir, ignore_errors=True)
        else:
            for key, value in tracker.accounting().items():
                store.set_meta(key, value)
            summary = write_metrics(store, tracker.graph, stopped_by=budget.exhausted())
            store.close()
        if batched is not None:  # the contexts' batching thread
            batched.close()
    return summary


MODEL_PARTS = {"model": "seconds", "prefill": "prefill_seconds", "decode": "decode_seconds"}  # part -> usage field


def _accounting(base: RunMeta, tracker: StateTracker, budget: Budget, model, engine) -> dict[str, object]:
    """The run's totals so far: the parts before this one (`base`, the meta at start) plus this part's tokens,
    seconds, time by part and role counts. Written with every step, so a killed run keeps them."""
    timings = dict(tracker.timings)
    if model is not None:  # model time overlaps the browser's: the Predictor decodes while the action runs
        total, start = model.usage_report().get("total", {}), budget.model_at_start
        for part, field in MODEL_PARTS.items():
            if part == "model" or total.get(field):  # a remote server's prefill and decode are not known here
                timings[part] = total.get(field, 0.0) - start.get(field, 0.0)
    out: dict[str, object] = {
        "tokens": base.tokens + budget.tokens(),
        "seconds": base.seconds + budget.seconds(),
        "timings": {k: base.timings.get(k, 0.0) + timings.get(k, 0.0) for k in base.timings | timings},
    }
    if engine() is not None:
        out["roles"] = merged_report(base.roles, engine().stats.report())
    return out
