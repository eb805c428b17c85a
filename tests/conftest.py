"""Shared fixtures: the bundled sites served on ephemeral ports, and one real Chromium per test session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
if WORKER := os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs two workers (pytest-xdist, one file each)
    import atexit
    import shutil
    import tempfile

    # each worker keeps its own Prefect database (two ephemeral servers on one SQLite file lock each other) and
    # one torch thread, so the two workers' model calls do not oversubscribe the cores; the database goes with
    # the worker
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix=f"scalehop-prefect-{WORKER}-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
    os.environ["OMP_NUM_THREADS"] = "1"

from explorer import BrowserConfig, Chromium, SiteConfig  # noqa: E402
from sites import serve_sites  # noqa: E402

FAST = {"navigation_ms": 4000, "action_ms": 3000}


@pytest.fixture(scope="session")
def site_urls() -> dict[str, str]:
    """name -> base URL of each bundled site (the slow page sleeps 30 s: longer than any test timeout)."""
    servers = serve_sites(port=0, slow_seconds=30)
    yield servers.urls
    servers.stop()


@pytest.fixture(scope="session")
def site_config(site_urls):
    """Build a SiteConfig for a bundled site by name, with short timeouts."""

    def make(name: str, **overrides) -> SiteConfig:
        url = site_urls[name]
        fields = {"timeouts": FAST, "reset_url": url + "__reset", **overrides}
        return SiteConfig(name=name, start_url=url, **fields)

    return make


@pytest.fixture(scope="session")
async def chromium(site_urls):
    """One real headless Chromium (Debian's) for the whole test session."""
    origins = list(site_urls.values())
    browser = await Chromium.launch(BrowserConfig(), origins)
    yield browser
    await browser.close()


@pytest.fixture
async def open_session(chromium, site_config):
    """Open a fresh, reset browser session on a bundled site; closed after the test."""
    sessions = []

    async def make(name: str, **overrides):
        session = await chromium.new_session(site_config(name, **overrides))
        sessions.append(session)
        await session.reset()
        return session

    yield make
    for s in sessions:
        await s.close()


@pytest.fixture(scope="session")
def similarity():
    """The real MiniLM sentence similarity the Judger uses (loaded once per test session)."""
    from explorer.models import Embedder

    return Embedder().similarity
