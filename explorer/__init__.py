"""The explorer: browser environment, observations, roles, models, the SCALE-Hop graph and loop."""

from explorer.browser import BrowserSession, Chromium
from explorer.config import BrowserConfig, SiteConfig, load_site_config
from explorer.errors import BrowserNotFound, ConfigError, ScalehopError, SiteUnreachable
from explorer.observe import observe, save_observation
from explorer.records import Action, ActionOutcome, BrowserEvent, Element, Observation

__all__ = [
    "Action",
    "ActionOutcome",
    "BrowserConfig",
    "BrowserEvent",
    "BrowserNotFound",
    "BrowserSession",
    "Chromium",
    "ConfigError",
    "Element",
    "Observation",
    "ScalehopError",
    "SiteConfig",
    "SiteUnreachable",
    "load_site_config",
    "observe",
    "save_observation",
]
