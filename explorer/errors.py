"""User-facing errors: each names the bad input and what to do about it (the CLI prints one line)."""


class ScalehopError(Exception):
    """Base of every error caused by user input or the environment, not by a bug."""


class ConfigError(ScalehopError):
    """A site or run config that does not load or does not validate."""


class BrowserNotFound(ScalehopError):
    """No Chromium executable where the config or the environment points."""


class SiteUnreachable(ScalehopError):
    """The start URL of a site does not answer."""
