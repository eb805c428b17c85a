"""What the Prefect flows share: the retry policy, site configs from deployment parameters, artifact keys, and a
way to call a flow from synchronous code.

Tasks retry on transient faults (a browser crash, a model server 5xx); configuration errors fail at once.
"""

from __future__ import annotations

import asyncio

from explorer.config import SiteConfig, load_site_config
from explorer.errors import ScalehopError

RETRIES = 2
RETRY_DELAY_S = 10


def transient(task_, task_run, state) -> bool:
    """Retry anything but a user error (bad config, bad path): those fail the same way every time."""
    try:
        state.result()
    except ScalehopError:
        return False
    except Exception:  # noqa: BLE001 - a crash, a timeout, a 5xx: worth another try
        return True
    return False


def site_config(site: str | SiteConfig) -> SiteConfig:
    """A SiteConfig from a config path or start URL (deployment parameters are plain strings)."""
    return site if isinstance(site, SiteConfig) else load_site_config(site)


def artifact_key(name: str) -> str:
    """An artifact key: lowercase letters, digits and dashes only."""
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "site"


def run(flow_fn, *args, **kwargs):
    """Call a flow from synchronous code (async flows get an event loop)."""
    result = flow_fn(*args, **kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result
