"""`scalehop demo`: serve the bundled sites, walk each with the browser environment, then explore each with
SCALE-Hop and the embedded model on a short budget, printing what happened and where it went.

Later stages (datasets, training, report) plug in here.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from explorer.browser import Chromium
from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.observe import save_observation
from explorer.records import Action
from flows.explore import run_exploration
from sites import serve_sites


def bundled_site_configs(urls: dict[str, str]) -> list[SiteConfig]:
    """SiteConfigs for the bundled sites served at `urls` (name -> base URL)."""
    return [SiteConfig(name=name, start_url=url, reset_url=url + "__reset") for name, url in urls.items()]


async def walk_site(chromium: Chromium, site: SiteConfig, out: Path, steps: int, seed: int) -> dict:
    """Observe the start page, then click `steps` random usable elements; returns a summary row."""
    rng = random.Random(seed)
    session = await chromium.new_session(site)
    urls, keys, observations = set(), set(), 0
    try:
        await session.reset()
        obs = await session.observe()
        save_observation(obs, out / site.name)
        for _ in range(steps + 1):
            observations += 1
            urls.add(obs.url)
            keys.update(el.key for el in obs.elements)
            print(f"  [{site.name}] {obs.title!r} {obs.url} — {len(obs.elements)} elements")
            candidates = [el for el in obs.elements if el.role in ("link", "button", "tab") and el.enabled]
            if not candidates or observations > steps:
                break
            outcome = await session.act(Action.on(rng.choice(candidates)), obs)
            note = "ok" if outcome.ok else f"refused/failed: {outcome.error}"
            print(f"      {outcome.action.describe()} -> {note}")
            obs = await session.observe()
    finally:
        await session.close()
    kinds = [e.kind for e in session.events]
    return {
        "site": site.name,
        "observations": observations,
        "urls": len(urls),
        "elements": len(keys),
        "blocked": session.blocked_requests,
        "refused": kinds.count("refused"),
        "dialogs": kinds.count("dialog"),
        "errors": sum(k in ("timeout", "navigation_error", "crash", "http_error") for k in kinds),
    }


async def _demo(out: Path, browser: BrowserConfig, steps: int) -> tuple[list[dict], list[dict]]:
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        sites = bundled_site_configs(servers.urls)
        origins = [o for s in sites for o in s.allowed_origins]
        async with await Chromium.launch(browser, origins) as chromium:
            walks = [await walk_site(chromium, s, out / "observe", steps, seed=i) for i, s in enumerate(sites)]
        print("\nSCALE-Hop exploration with the embedded model (a short budget per site)")
        cfg = ExploreConfig(max_steps=steps, steps_per_hop=4, stall_steps=2, verify_actions=1)
        runs = [await run_exploration(site, cfg, browser, runs_dir=out / "runs") for site in sites]
        return walks, runs
    finally:
        servers.stop()


def _table(rows: list[dict], cols: list[str]) -> None:
    print("\n" + "  ".join(f"{c:>15s}" for c in cols))
    for row in rows:
        print("  ".join(f"{row[c]!s:>15s}" for c in cols))


def run_demo(out: str | Path = "runs/demo", browser: BrowserConfig | None = None, steps: int = 8) -> list[dict]:
    """Run the demo and print a summary table; returns its rows."""
    out = Path(out)
    print("scalehop demo: serving the bundled sites, walking each with the browser environment, then exploring")
    walks, runs = asyncio.run(_demo(out, browser or BrowserConfig(), steps))
    _table(walks, list(walks[0]))
    _table(runs, ["run_id", "steps", "states", "same_url_states", "elements_tried", "failures", "tokens"])
    print(f"\nstart-page observations (observation.json, screenshot.png, som.png) in {out / 'observe'}/<site>/")
    print(f"exploration runs (run.sqlite, blobs/, metrics.json) in {out / 'runs'}/<run_id>/")
    return walks
