"""`scalehop observe`: open a site, observe its start page, save the observation."""

from __future__ import annotations

from pathlib import Path

from explorer.browser import Chromium
from explorer.config import BrowserConfig, SiteConfig
from explorer.observe import save_observation
from explorer.records import Observation


async def observe_start_page(site: SiteConfig, browser: BrowserConfig) -> Observation:
    """Launch Chromium, go to the site's start URL (logging in if configured) and observe it."""
    async with await Chromium.launch(browser, site.allowed_origins) as chromium:
        session = await chromium.new_session(site)
        try:
            await session.start()
            return await session.observe()
        finally:
            await session.close()


async def observe_to_dir(site: SiteConfig, browser: BrowserConfig, out: str | Path) -> tuple[Observation, Path]:
    """Observe the start page and write observation.json, screenshot.png and som.png to `out`."""
    obs = await observe_start_page(site, browser)
    return obs, save_observation(obs, out)
