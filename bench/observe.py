"""Per-step cost of observing a page on each bundled site: extraction, screenshot, SoM overlay, total.

Walks each site with seeded random clicks and times every observation's parts (milliseconds,
median and p90). Also measures the scope guard's cost side by side in the same run: the same pages
loaded with request routing on (the guard) and off.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)

from bench.common import median, pct, print_table  # noqa: E402
from explorer import Action, BrowserConfig, Chromium, SiteConfig  # noqa: E402
from explorer.observe import draw_som, observe, page_script  # noqa: E402
from sites import serve_sites  # noqa: E402

STEPS = 30


async def _time_parts(page) -> dict[str, float]:
    t0 = time.perf_counter()
    raw = await page.evaluate(page_script("extract"), {"maxElements": 300})
    t1 = time.perf_counter()
    png = await page.screenshot(type="png")
    t2 = time.perf_counter()
    obs = await observe(page)  # the whole thing, as the explorer calls it
    t3 = time.perf_counter()
    draw_som(png, obs.elements)
    t4 = time.perf_counter()
    return {"extract": t1 - t0, "screenshot": t2 - t1, "som": t4 - t3, "observe": t3 - t2, "n": len(raw["elements"])}


async def bench_site(chromium: Chromium, site: SiteConfig, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    session = await chromium.new_session(site)
    parts: dict[str, list[float]] = {"extract": [], "screenshot": [], "som": [], "observe": [], "n": []}
    await session.reset()
    for _ in range(STEPS):
        for k, v in (await _time_parts(session.page)).items():
            parts[k].append(v)
        obs = await session.observe()
        links = [e for e in obs.elements if e.role in ("link", "button", "tab") and e.href != site.start_url]
        outcome = await session.act(Action.on(rng.choice(links)), obs) if links else None
        if outcome is None or not outcome.ok:
            await session.act(Action(kind="goto", url=site.start_url))
    await session.close()
    return parts


async def guard_cost(chromium: Chromium, site: SiteConfig, urls: list[str]) -> tuple[float, float]:
    """Median page-load seconds with routing (scope guard) on and off, interleaved."""
    guarded = await chromium.new_session(site)
    plain_ctx = await chromium.browser.new_context(viewport={"width": 1280, "height": 800})
    plain = await plain_ctx.new_page()
    on, off = [], []
    for url in urls * 2:
        t0 = time.perf_counter()
        await guarded.page.goto(url, wait_until="load")
        on.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await plain.goto(url, wait_until="load")
        off.append(time.perf_counter() - t0)
    await guarded.close()
    await plain_ctx.close()
    return median(on), median(off)


async def main() -> None:
    servers = serve_sites(port=0, slow_seconds=5)
    sites = [
        SiteConfig(name=n, start_url=u, reset_url=u + "__reset", timeouts={"navigation_ms": 3000})
        for n, u in servers.urls.items()
    ]
    rows, guard_rows = [], []
    async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites]) as chromium:
        for i, site in enumerate(sites):
            parts = await bench_site(chromium, site, seed=i)
            row = [site.name, STEPS, round(median(parts["n"]))]
            for k in ("extract", "screenshot", "som", "observe"):
                row += [median(parts[k]) * 1000, pct(parts[k], 0.9) * 1000]
            rows.append(row)
            on, off = await guard_cost(chromium, site, [site.start_url, site.start_url + "search?q=a"])
            guard_rows.append([site.name, on * 1000, off * 1000, f"{on / off:.2f}x"])
    servers.stop()
    print("observe cost per step (ms); observe = extract + screenshot + SoM + records")
    heads = ["site", "steps", "elements"]
    for k in ("extract", "screenshot", "som", "observe"):
        heads += [f"{k} p50", f"{k} p90"]
    print_table(heads, rows)
    print("\nscope guard (request routing) cost: median page load (ms), same pages, interleaved")
    print_table(["site", "guard on", "guard off", "ratio"], guard_rows)


if __name__ == "__main__":
    asyncio.run(main())
