"""The explorer: browser environment, observations, roles, models, the SCALE-Hop graph and loop.

Its names load on first use (`from explorer import Chromium` imports the browser then), so a light module such as
`explorer.config` does not pull in the browser; `observe`, which shares its module's name, is imported from
`explorer.observe`."""

from explorer.lazy import lazy_exports

_EXPORTS = {
    "BrowserSession": "explorer.browser",
    "Chromium": "explorer.browser",
    "BrowserConfig": "explorer.config",
    "SiteConfig": "explorer.config",
    "load_site_config": "explorer.config",
    "BrowserNotFound": "explorer.errors",
    "ConfigError": "explorer.errors",
    "ScalehopError": "explorer.errors",
    "SiteUnreachable": "explorer.errors",
    "save_observation": "explorer.observe",
    "Action": "explorer.records",
    "ActionOutcome": "explorer.records",
    "BrowserEvent": "explorer.records",
    "Element": "explorer.records",
    "Observation": "explorer.records",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
