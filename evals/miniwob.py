"""MiniWoB++ tasks from the PyPI package `miniwob`, run in the project's own browser.

The package's HTML and JavaScript are served unmodified from a local HTTP server on 127.0.0.1. An episode
starts the way the package's own Selenium environment (`miniwob/selenium_instance.py`) starts one: load the
task page, `Math.seedrandom(seed)`, `core.setDataMode(mode)`, `core.startEpisodeReal()`, wait for
`WOB_TASK_READY`; the intent is `core.getUtterance()`, and the reward and the end of the episode are the
task's own `WOB_REWARD_GLOBAL`, `WOB_RAW_REWARD_GLOBAL`, `WOB_REWARD_REASON` and `WOB_DONE_GLOBAL`. The task
ends itself with reward -1 when `core.EPISODE_MAX_TIME` runs out. The agent sees the page with the
project's `BrowserSession.observe()` and acts with `BrowserSession.act(Action)`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, Field

from explorer.browser import BrowserSession
from explorer.config import Policy, SiteConfig, Timeouts
from explorer.errors import ScalehopError
from explorer.records import Action, ActionOutcome, Observation

INSTALL = "pip install --no-deps miniwob==1.1.0"
# The package's window (miniwob.constants.WINDOW_WIDTH/HEIGHT); the task itself is the 160x210 #wrap.
VIEWPORT = (500, 320)
# Tasks whose elements the project's observation lists and that its action kinds (click, type, select,
# hover) solve: a scripted policy reached reward > 0 on each (seeds 0-2, when written; tests/test_miniwob.py
# checks that each loads and is observed). Left out, because `explorer/js/extract.js`
# lists only elements that are interactive by markup (a[href], button, input, [onclick], [tabindex], ARIA
# roles) and these tasks' targets are spans, divs or list items whose click handlers are bound from script:
# click-link, click-tab-2 (span.alink), navigate-tree (tree spans), email-inbox*, social-media* (div and span
# controls); use-autocomplete (its menu items are tabindex=-1 divs, listed only as one element for the menu).
TASK_TYPES: tuple[str, ...] = (
    "button-delay",
    "choose-list",
    "click-button",
    "click-button-sequence",
    "click-checkboxes",
    "click-checkboxes-large",
    "click-checkboxes-transfer",
    "click-collapsible",
    "click-dialog",
    "click-dialog-2",
    "click-option",
    "click-tab",
    "click-test",
    "click-test-2",
    "click-test-transfer",
    "click-widget",
    "enter-password",
    "enter-text",
    "enter-text-2",
    "enter-text-dynamic",
    "focus-text",
    "focus-text-2",
    "login-user",
    "login-user-popup",
    "read-table",
    "search-engine",
)
_READY = "() => typeof core !== 'undefined' && core.cover_div !== null && typeof genProblem === 'function'"
_START = """([seed, mode, limit]) => {
  core.endEpisode(0);
  Math.seedrandom(seed);
  core.setDataMode(mode);
  if (limit !== null) core.EPISODE_MAX_TIME = limit;
  core.startEpisodeReal();
  return core.EPISODE_MAX_TIME;
}"""
_STATUS = """() => ({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
  reason: WOB_REWARD_REASON === null || WOB_REWARD_REASON === undefined ? null : String(WOB_REWARD_REASON)})"""
_UTTERANCE = "() => core.getUtterance()"

Reason = Literal["done", "time_limit", "max_steps", "policy_stop"]
MiniWoBPolicy = Callable[[str, Observation, list[ActionOutcome]], Awaitable[Action | None]]


class MiniWoBMissing(ScalehopError):
    """The `miniwob` package (or one of its task pages) is not installed."""


def miniwob_dir() -> Path:
    """The installed package's `html` folder (`core/`, `common/`, `miniwob/<task>.html`).

    Found without importing `miniwob` (its `__init__` registers gymnasium environments, which this does
    not need); a missing package raises MiniWoBMissing naming the install command.
    """
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise MiniWoBMissing(f"the MiniWoB++ package is not installed: run `{INSTALL}`")
    html = Path(next(iter(spec.submodule_search_locations))) / "html"
    if not (html / "core" / "core.js").is_file():
        raise MiniWoBMissing(f"{html} holds no core/core.js: reinstall with `{INSTALL}`")
    return html


def task_page(task_type: str) -> Path:
    """The task's HTML file in the installed package; an unknown task raises MiniWoBMissing."""
    page = miniwob_dir() / "miniwob" / f"{task_type}.html"
    if not page.is_file():
        raise MiniWoBMissing(f"no MiniWoB task {task_type!r} in {page.parent} (the installed `miniwob`)")
    return page


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


class MiniWoBServer:
    """The package's html folder served on 127.0.0.1 (an ephemeral port by default), in a daemon thread."""

    def __init__(self, port: int = 0):
        handler = functools.partial(_QuietHandler, directory=str(miniwob_dir()))
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="miniwob-http", daemon=True)
        self._thread.start()
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}/"

    def task_url(self, task_type: str) -> str:
        """The URL of a task page (checked to exist in the package)."""
        task_page(task_type)
        return f"{self.url}miniwob/{task_type}.html"

    def site(self, task_type: str = "click-test", **overrides: object) -> SiteConfig:
        """A SiteConfig for this server: see `miniwob_site`."""
        return miniwob_site(self.task_url(task_type), **overrides)

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> MiniWoBServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def miniwob_site(start_url: str, **overrides: object) -> SiteConfig:
    """A SiteConfig for MiniWoB pages at `start_url` (a task page or the `miniwob/` folder of a server).

    The allowed origin is the server's; no element is forbidden (tasks ask for "Delete" and the like in a
    sandbox); the viewport is the package's window.
    """
    fields: dict[str, object] = {
        "name": "miniwob",
        "start_url": start_url,
        "viewport": VIEWPORT,
        "timeouts": Timeouts(navigation_ms=10_000, action_ms=3_000, settle_ms=100, expect_ms=500),
        "policy": Policy(forbid=[]),
        **overrides,
    }
    return SiteConfig(**fields)


class EpisodeStatus(BaseModel):
    """The task's own end-of-episode globals, read from its JavaScript."""

    done: bool
    reward: float  # WOB_REWARD_GLOBAL: the raw reward, positive rewards scaled by the time left
    raw_reward: float  # WOB_RAW_REWARD_GLOBAL
    reason: str | None = None  # WOB_REWARD_REASON ("timed out" when the task's time limit ran out)


class EpisodeResult(BaseModel):
    """One finished episode: the task's reward, the actions taken and why it ended."""

    task_type: str
    seed: int | str
    intent: str
    reward: float
    raw_reward: float
    success: bool  # reward > 0
    steps: int
    actions: list[Action] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)  # action errors the browser reported, in order
    reason: Reason
    task_reason: str | None = None  # the task's WOB_REWARD_REASON
    time_limit_ms: int
    seconds: float


class MiniWoBEpisode:
    """One MiniWoB++ episode in a BrowserSession whose site allows the MiniWoB server's origin."""

    def __init__(
        self,
        session: BrowserSession,
        task_type: str,
        seed: int | str,
        *,
        data_mode: str = "train",
        time_limit_ms: int | None = None,
    ):
        self.session = session
        self.task_type = task_type
        self.seed = seed
        self.data_mode = data_mode
        self.url = _task_url(session.site.start_url, task_type)
        self._limit_override = time_limit_ms
        self.time_limit_ms = 0
        self.intent = ""
        self.fields: dict[str, str] = {}
        self.started_at = 0.0

    async def start(self) -> MiniWoBEpisode:
        """Load the task page, seed it and start the episode; sets `intent` (the task's utterance)."""
        outcome = await self.session.act(Action(kind="goto", url=self.url))
        if not outcome.ok:
            raise MiniWoBMissing(f"MiniWoB task page {self.url} did not load: {outcome.error}")
        page = self.session.page
        timeout = self.session.site.timeouts.navigation_ms
        try:
            await page.wait_for_function(_READY, timeout=timeout)
            limit = await page.evaluate(_START, [self.seed, self.data_mode, self._limit_override])
            await page.wait_for_function("() => WOB_TASK_READY === true", timeout=timeout)
            utterance = await page.evaluate(_UTTERANCE)
        except PlaywrightError as exc:
            raise MiniWoBMissing(f"MiniWoB task {self.task_type} did not start: {str(exc).splitlines()[0]}") from None
        self.started_at = time.monotonic()
        self.time_limit_ms = int(limit)
        if isinstance(utterance, dict):  # tasks that state their fields explicitly
            self.fields = {str(k): str(v) for k, v in (utterance.get("fields") or {}).items()}
            utterance = utterance["utterance"]
        self.intent = str(utterance)
        return self

    async def status(self) -> EpisodeStatus:
        """The task's done flag, rewards and reason, read from its JavaScript."""
        return EpisodeStatus(**await self.session.page.evaluate(_STATUS))

    async def reward(self) -> float:
        """WOB_REWARD_GLOBAL: 0 until the task ends the episode, then in [-1, 1]."""
        return (await self.status()).reward

    async def done(self) -> bool:
        """WOB_DONE_GLOBAL: has the task ended the episode (answered, failed or timed out)?"""
        return (await self.status()).done

    def time_left(self) -> float:
        """Seconds until the task's own time limit ends the episode."""
        return self.time_limit_ms / 1000 - (time.monotonic() - self.started_at)

    async def stop(self) -> None:
        """End the episode with reward 0 if it is still running (the package's `force_stop`)."""
        try:
            await self.session.page.evaluate("() => core.endEpisode(0)")
        except PlaywrightError:
            pass


async def run_episode(
    session: BrowserSession,
    task_type: str,
    seed: int | str,
    policy: MiniWoBPolicy,
    max_steps: int,
    *,
    data_mode: str = "train",
    time_limit_ms: int | None = None,
) -> EpisodeResult:
    """Run `policy` on one seeded episode until the task says done, the policy stops, or a limit hits.

    `policy(intent, observation, history)` returns the next Action or None to stop; `history` holds the
    outcomes of the actions taken so far. The reward is the task's own; `time_limit_ms` overrides the
    task's `core.EPISODE_MAX_TIME` (None keeps it).
    """
    episode = await MiniWoBEpisode(session, task_type, seed, data_mode=data_mode, time_limit_ms=time_limit_ms).start()
    history: list[ActionOutcome] = []
    reason: Reason = "max_steps"
    status = await episode.status()
    while not status.done:
        if len(history) >= max_steps:
            reason = "max_steps"
            break
        if episode.time_left() <= 0:
            reason = "time_limit"
            status = await _await_done(episode, 1.0)  # the task's own timer ends it with reward -1
            break
        obs = await session.observe()
        action = await policy(episode.intent, obs, list(history))
        if action is None or action.kind == "stop":
            reason = "policy_stop"
            break
        history.append(await session.act(action, obs))
        status = await episode.status()
    if status.done:
        reason = "time_limit" if status.reason == "timed out" else "done"
    else:
        await episode.stop()  # ends the task's timer; the reward stays the 0 of an unfinished episode
    return EpisodeResult(
        task_type=task_type,
        seed=seed,
        intent=episode.intent,
        reward=status.reward,
        raw_reward=status.raw_reward,
        success=status.reward > 0,
        steps=len(history),
        actions=[o.action for o in history],
        errors=[o.error for o in history if o.error],
        reason=reason,
        task_reason=status.reason,
        time_limit_ms=episode.time_limit_ms,
        seconds=time.monotonic() - episode.started_at,
    )


async def _await_done(episode: MiniWoBEpisode, seconds: float) -> EpisodeStatus:
    """Poll the task's status until it says done or `seconds` pass."""
    deadline = time.monotonic() + seconds
    status = await episode.status()
    while not status.done and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        status = await episode.status()
    return status


def _task_url(start_url: str, task_type: str) -> str:
    """The task page next to the site's start URL, which must lie in a MiniWoB `miniwob/` folder."""
    url = urljoin(start_url, f"{task_type}.html")
    if not urlsplit(url).path.endswith(f"/miniwob/{task_type}.html"):
        raise MiniWoBMissing(
            f"the session's start URL {start_url} is not in a MiniWoB `miniwob/` folder: "
            "open the session with `MiniWoBServer().site()` or `miniwob_site(url)`"
        )
    task_page(task_type)
    return url
