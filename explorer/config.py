"""Typed configs for a site and for the browser, loaded from TOML/YAML or built from a bare URL."""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from explorer.errors import BrowserNotFound, ConfigError

# Element names or hrefs that the browser never actuates unless a site config says otherwise.
DEFAULT_FORBID = (
    r"\blog\s*-?\s*out\b",
    r"\bsign\s*-?\s*out\b",
    r"\bdelete\b",
    r"\bdeactivate\b",
    r"\bclose (my )?account\b",
    r"\bunsubscribe\b",
    r"\bpay( now)?\b",
    r"\bplace (your )?order\b",
    r"\bpurchase\b",
    r"\bbuy now\b",
    r"/logout\b",
    r"/signout\b",
)
# Calibrated on the labelled pairs of configs/state_pairs.yaml (bench/dedup.py prints the sweep): same-state
# pairs (reloads, hover) score >= 0.9996, different states <= 0.9984 (tabs whose panel is below the fold).
DEFAULT_DELTA = 0.999
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # ${NAME}: a value taken from the environment


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Timeouts(_Strict):
    """Every wait is bounded by one of these (milliseconds)."""

    navigation_ms: int = Field(15_000, gt=0)
    action_ms: int = Field(5_000, gt=0)
    settle_ms: int = Field(150, ge=0)  # pause after an action before checking for a navigation
    expect_ms: int = Field(2_000, ge=0)  # how long a link click or form submission may take to start loading


class Policy(_Strict):
    """What the browser must never do on a site."""

    forbid: list[str] = Field(default_factory=lambda: list(DEFAULT_FORBID))
    confirm_dialogs: Literal["accept", "dismiss"] = "dismiss"
    max_dialogs_per_action: int = Field(10, gt=0)
    max_navigations_per_action: int = Field(20, gt=0)

    @field_validator("forbid")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"bad regex {p!r}: {exc}") from None
        return patterns


class LoginStep(_Strict):
    """One scripted login step; `value` may reference environment variables as ${NAME}."""

    action: Literal["goto", "fill", "click", "press", "wait_for"]
    selector: str | None = None
    value: str | None = None
    url: str | None = None

    def resolved_value(self) -> str | None:
        """`value` with ${NAME} replaced from the environment; a missing variable is a ConfigError."""
        if self.value is None:
            return None

        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ:
                raise ConfigError(f"login step needs environment variable {name}: export it before running")
            return os.environ[name]

        return ENV_REF.sub(sub, self.value)

    @property
    def is_secret(self) -> bool:
        """True when the value comes from the environment (never logged)."""
        return bool(self.value and ENV_REF.search(self.value))


class SiteConfig(_Strict):
    """One site to explore: where to start, what is in scope, and what is forbidden."""

    name: str
    start_url: str
    allowed_origins: list[str] = Field(default_factory=list)
    viewport: tuple[int, int] = (1280, 800)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    policy: Policy = Field(default_factory=Policy)
    login: list[LoginStep] = Field(default_factory=list)
    reset_url: str | None = None  # GET or POST here restores the site's state (bundled sites: /__reset)
    ignore_params: list[str] = Field(default_factory=list)  # query parameters that never change state
    keep_fragment: bool = False
    mask: list[str] = Field(default_factory=list)  # CSS selectors painted over in every screenshot (and passwords)
    volatile: list[str] = Field(default_factory=list)  # CSS selectors state identity ignores (clocks, ads, carousels)

    @field_validator("start_url")
    @classmethod
    def _url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.netloc):
            raise ValueError(f"not an http(s) or file URL: {url!r}")
        return url

    @model_validator(mode="after")
    def _default_origins(self) -> SiteConfig:
        if not self.allowed_origins:
            self.allowed_origins = [origin_of(self.start_url)]
        return self

    @classmethod
    def from_url(cls, url: str, **overrides: object) -> SiteConfig:
        """A config for a bare start URL; allowed origins default to that URL's origin."""
        fields = {"name": urlsplit(url).netloc or "local-file", **overrides}  # a given name wins over the host
        return validated(lambda: cls(start_url=url, **fields), url)


class BrowserConfig(_Strict):
    """How to launch Chromium. `executable`: a path, 'playwright' for Playwright's own build, or None."""

    executable: str | None = None
    headless: bool = True
    block_other_hosts: bool = True  # DNS-level guard: only the allowed hosts resolve (cheap, no routing)
    extra_args: list[str] = Field(default_factory=list)

    def executable_path(self) -> str | None:
        """Resolve the Chromium binary: config, then $SCALEHOP_CHROMIUM, then Debian's; None = Playwright's."""
        choice = self.executable or os.environ.get("SCALEHOP_CHROMIUM")
        if choice == "playwright":
            return None
        for candidate in [choice] if choice else ["/usr/bin/chromium", "chromium", "chromium-browser"]:
            found = shutil.which(candidate) if "/" not in candidate else candidate
            if found and os.access(found, os.X_OK):
                return found
        where = choice or "/usr/bin/chromium"
        raise BrowserNotFound(
            f"Chromium not found at {where}: install it with `apt-get install -y chromium`, "
            "or set SCALEHOP_CHROMIUM to a Chrome/Chromium binary (or to 'playwright' for Playwright's own)"
        )


class ExploreConfig(_Strict):
    """One exploration run: strategy, SCALE-Hop settings and budgets (any budget reached stops it cleanly)."""

    strategy: Literal["scale", "random", "bfs", "bfs-click", "greedy"] = Field(
        "scale", description="exploration strategy (bfs: URL-frontier crawl; bfs-click: click-and-return)"
    )
    hops: int = Field(60, gt=0, description="outer-loop hops (SCALE-Hop): visits of frontier nodes")
    steps_per_hop: int = Field(25, gt=0, description="K: inner-loop steps at one node")
    max_steps: int | None = Field(
        None, gt=0, description="browser actions in total, returns, backtracks and resumed runs included"
    )
    max_seconds: float | None = Field(None, gt=0, description="wall-clock budget of the run")
    max_tokens: int | None = Field(None, gt=0, description="model tokens in and out")
    resample_tries: int = Field(2, ge=0, description="after a right prediction: return and pick again, this often")
    stall_steps: int = Field(6, gt=0, description="M: steps without a new state that make a stall")
    verify_actions: int = Field(3, gt=0, description="N: random actions the Predictor must get right for `full`")
    search_probes: int = Field(
        0,
        ge=0,
        description="steps of the budget that submit the site's search with words of its pages (first, after a start)",
    )
    memory: bool = Field(True, description="show the Predictor what the same kind of action did earlier in the run")
    delta: float = Field(DEFAULT_DELTA, gt=0, le=1, description="SSIM threshold of state identity")
    max_variants_per_path: int = Field(30, gt=0, description="URL variants of one path kept as separate states")
    contexts: int = Field(1, gt=0, description="parallel browser contexts on the site")
    max_failed_steps: int = Field(
        5, gt=0, description="steps in a row that cannot reach the site (network errors) before the run stops"
    )
    seed: int = Field(0, description="random seed")


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL ('file://' for local files)."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        return "file://"
    return f"{parts.scheme}://{parts.netloc}".lower()


def load_site_config(target: str, **overrides: object) -> SiteConfig:
    """A SiteConfig from a URL, or from a .toml/.yaml/.yml file; errors name the file and the field."""
    if re.match(r"^(https?|file)://", target):
        return SiteConfig.from_url(target, **overrides)
    path = Path(target)
    if not path.is_file():
        raise ConfigError(f"{target}: no such site config file and not a URL (give http://..., or a .toml/.yaml)")
    try:
        text = path.read_text()
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"{target}: unknown config format {path.suffix!r}: use .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{target}: cannot parse: {first}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{target}: expected a table of settings at the top level")
    data = data.get("site", data)
    data.setdefault("name", path.stem)
    return validated(lambda: SiteConfig(**{**data, **overrides}), target)


def validated(build, source: str):
    """Run `build()`; a pydantic ValidationError becomes a one-line ConfigError naming the field."""
    try:
        return build()
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(config)"
        bad = err.get("input")
        shown = f" (got {bad!r})" if not isinstance(bad, dict) else ""
        raise ConfigError(f"{source}: field '{field}': {err['msg']}{shown}") from None
