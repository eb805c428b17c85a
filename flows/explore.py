"""`scalehop explore`: run an exploration strategy on a site into a crash-safe run folder."""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path

from explorer.baselines import random_step
from explorer.browser import Chromium
from explorer.config import BrowserConfig, SiteConfig
from explorer.dedup import DEFAULT_DELTA
from explorer.records import Action
from explorer.store import RunStore, resume
from explorer.tracker import StateTracker


def new_run_id(strategy: str) -> str:
    """A sortable unique run id."""
    return time.strftime("%Y%m%d-%H%M%S") + f"-{strategy}-{uuid.uuid4().hex[:6]}"


def open_run(site: SiteConfig, runs_dir: str | Path, run_id: str | None, resume_run: str | None, strategy: str):
    """A fresh run store, or a resumed one (its graph rebuilt from the store); with its tracker."""
    if resume_run:
        store, graph = resume(Path(runs_dir) / resume_run)
    else:
        meta = {"site": site.model_dump(mode="json"), "strategy": strategy}
        store = RunStore.create(runs_dir, run_id or new_run_id(strategy), meta)
        graph = store.load_graph()
    tracker = StateTracker(
        store, graph, delta=DEFAULT_DELTA, ignore_params=site.ignore_params, keep_fragment=site.keep_fragment
    )
    return store, tracker


async def random_walk_run(
    site: SiteConfig,
    browser: BrowserConfig,
    runs_dir: str | Path,
    steps: int,
    *,
    seed: int = 0,
    run_id: str | None = None,
    resume_run: str | None = None,
) -> dict:
    """Uniform random walk for `steps` browser actions (counting the first load); returns a summary."""
    store, tracker = open_run(site, runs_dir, run_id, resume_run, "random")
    rng = random.Random(f"{seed}:{tracker.next_step}")
    started = time.monotonic()
    async with await Chromium.launch(browser, site.allowed_origins) as chromium:
        session = await chromium.new_session(site)
        step = await tracker.act(session, Action(kind="goto", url=site.start_url), None, None, kind="start")
        while tracker.next_step < steps:
            step = await tracker.act(session, random_step(step.observation, site, rng), step.observation, step.node_id)
        await session.close()
    summary = {
        "run_id": store.dir.name,
        "run_dir": str(store.dir),
        "strategy": "random",
        "steps": tracker.next_step,
        "states": len(tracker.graph.g),
        "urls": len({n.url for n in tracker.graph.nodes()}),
        "seconds": round(time.monotonic() - started, 2),
    }
    store.close()
    return summary
