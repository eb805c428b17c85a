"""The Playwright browser environment: launch, scope guard, action policy, bounded actions, recovery.

`Chromium` owns one launched browser; `BrowserSession` is one isolated context exploring one site.
Every wait is bounded by the site's timeouts. A renderer crash or a dialog flood replaces the page
and is recorded as an event; it never ends the run.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin

from playwright.async_api import (
    Browser,
    BrowserContext,
    Dialog,
    Download,
    Page,
    Playwright,
    Request,
    Response,
    Route,
    WebSocketRoute,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from explorer.config import BrowserConfig, SiteConfig
from explorer.errors import BrowserNotFound, ScalehopError, SiteUnreachable
from explorer.observe import INVALID_WATCH, observe, page_script
from explorer.records import Action, ActionOutcome, BrowserEvent, Element, EventKind, Observation
from explorer.safety import allowed_hosts, destination, forbidden_reason, forbidden_request, in_scope
from explorer.secrets import redact, redact_text, site_secrets

log = logging.getLogger(__name__)

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
_NEEDS_ELEMENT = ("click", "type", "select", "hover")
# Resolves once the page has not scrolled for three animation frames (wheel scrolling is asynchronous).
_SCROLL_SETTLED = """() => new Promise(done => {
  let last = -1, still = 0;
  const tick = () => {
    const y = window.scrollY;
    still = y === last ? still + 1 : 0;
    last = y;
    if (still >= 3) done(); else requestAnimationFrame(tick);
  };
  tick();
})"""
_FAULTS = ("timeout", "navigation_error", "navigation_loop", "crash", "dialog_flood")


class ObserveError(ScalehopError):
    """The page could not be observed (it kept navigating, hung, or crashed repeatedly)."""


class StaleElement(PlaywrightError):
    """The page changed since the observation: the mark no longer points at its element."""


def launch_args(config: BrowserConfig, allowed_origins: list[str]) -> list[str]:
    """Chromium flags; with `block_other_hosts`, only the allowed hosts resolve (a DNS-level guard)."""
    args = CHROMIUM_FLAGS + list(config.extra_args)
    hosts = allowed_hosts(allowed_origins)
    if config.block_other_hosts and hosts:
        args.append("--host-resolver-rules=MAP * ~NOTFOUND, " + ", ".join(f"EXCLUDE {h}" for h in hosts))
    return args


class Chromium:
    """One launched Chromium; open a `BrowserSession` per site (or per parallel explorer)."""

    def __init__(self, playwright: Playwright, browser: Browser):
        self._playwright = playwright
        self.browser = browser

    @classmethod
    async def launch(cls, config: BrowserConfig, allowed_origins: list[str]) -> Chromium:
        """Launch headless Chromium; a missing or broken binary is a one-line BrowserNotFound."""
        executable = config.executable_path()
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.launch(
                executable_path=executable, headless=config.headless, args=launch_args(config, allowed_origins)
            )
        except PlaywrightError as exc:
            await pw.stop()
            first = str(exc).strip().splitlines()[0]
            raise BrowserNotFound(
                f"Chromium at {executable or 'Playwright default'} did not start ({first}): "
                "install Debian's chromium (`apt-get install -y chromium`) or set SCALEHOP_CHROMIUM"
            ) from None
        return cls(pw, browser)

    async def new_session(self, site: SiteConfig) -> BrowserSession:
        """A fresh isolated context for `site`, with the scope guard and event handlers attached."""
        return await BrowserSession.open(self.browser, site)

    async def close(self) -> None:
        """Close the browser and stop Playwright."""
        try:
            await self.browser.close()
        finally:
            await self._playwright.stop()

    async def __aenter__(self) -> Chromium:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


@dataclass
class _Operation:
    """Bookkeeping for the action in progress: its events and navigation activity."""

    started: float = field(default_factory=time.monotonic)
    events: list[BrowserEvent] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    navigations: int = 0
    nav_pending: bool = False
    committed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    popups: list[Page] = field(default_factory=list)
    nav_method: str | None = None  # HTTP method of the last main-frame navigation request
    refused_navigation: str | None = None  # an out-of-scope main-frame navigation the guard answered with 204
    error_page_due: bool = False  # a main-frame navigation failed: Chromium's error page commits a moment later


class BrowserSession:
    """One browser context on one site: observe, act, reset, with every guard in place."""

    def __init__(self, context: BrowserContext, site: SiteConfig):
        self.context = context
        self.site = site
        self.page: Page | None = None
        self.events: list[BrowserEvent] = []
        self.blocked_requests = 0
        self.refused_navigations = 0
        self.status: int | None = None
        self._op = _Operation()
        self._policed = False  # requests the page makes are held to the policy (see act); not a reset's or login's
        self._opening_page = False
        self._recovery: asyncio.Task | None = None
        self._last_good_url: str | None = None
        self._secrets = site_secrets(site)  # redacted from every observation's text

    # ---- lifecycle -------------------------------------------------------------------------------------------
    @classmethod
    async def open(cls, browser: Browser, site: SiteConfig) -> BrowserSession:
        """Create the context (downloads refused, service workers blocked) and its first page."""
        context = await browser.new_context(
            viewport={"width": site.viewport[0], "height": site.viewport[1]},
            accept_downloads=False,
            service_workers="block",
        )
        context.set_default_timeout(site.timeouts.action_ms)
        context.set_default_navigation_timeout(site.timeouts.navigation_ms)
        session = cls(context, site)
        await context.add_init_script(script=INVALID_WATCH)
        await context.route("**/*", session._guard)
        await context.route_web_socket(lambda _: True, session._guard_ws)
        context.on("page", session._on_new_page)
        await session._new_page()
        return session

    async def close(self) -> None:
        """Close the context and every page in it."""
        try:
            await self.context.close()
        except PlaywrightError:
            pass

    async def start(self) -> ActionOutcome:
        """Go to the start URL and run the login steps; an unreachable site raises SiteUnreachable."""
        outcome = await self.act(Action(kind="goto", url=self.site.start_url))
        if not outcome.ok and outcome.status is None and "net::ERR_" in (outcome.error or ""):
            raise SiteUnreachable(
                f"cannot reach {self.site.start_url} ({outcome.error}): is the site running? "
                "For the bundled sites run `scalehop sites serve`."
            )
        if self.site.login:
            await self._login()
        return outcome

    async def reset(self) -> ActionOutcome:
        """Restore the site's state (its reset URL, if any), clear cookies and go to the start URL."""
        self._policed = False
        if self.site.reset_url:
            try:
                await self.context.request.post(self.site.reset_url, timeout=self.site.timeouts.navigation_ms)
            except PlaywrightError as exc:
                self._record("navigation_error", f"reset failed: {_first_line(exc)}", self.site.reset_url)
        await self.context.clear_cookies()
        return await self.start()

    # ---- observing and acting ----------------------------------------------------------------------------------
    async def observe(self) -> Observation:
        """Observe the current page; retried once after a navigation or crash, then an error event + raise."""
        last: Exception | None = None
        for _ in range(3):
            await self._await_recovery()
            try:
                timeout_s = self.site.timeouts.action_ms / 1000
                obs = await observe(self.page, timeout_s=timeout_s, mask=self.site.mask, volatile=self.site.volatile)
                obs.status = self.status
                return redact(obs, self._secrets)
            except (TimeoutError, PlaywrightError) as exc:
                last = exc
                await self._wait_load(self.site.timeouts.navigation_ms / 1000)
        self._record("observe_error", _first_line(last), self.page.url)
        raise ObserveError(f"could not observe {self.page.url}: {_first_line(last)}")

    async def act(self, action: Action, obs: Observation | None = None) -> ActionOutcome:
        """Execute `action` (marks refer to `obs`) within the site's timeouts; never raises for page faults."""
        await self._await_recovery()
        # a goto or back is checked by its URL before it runs; what a click, a key or a script starts (during the
        # action or after it, until the next goto, back, reset or start), by the route
        self._policed = action.kind not in ("goto", "back")
        self._op = _Operation()
        url_before = self.page.url
        refusal = self._refusal(action, obs)
        error = refusal
        if refusal is None:
            element = obs.element(action.mark) if obs and action.mark is not None else None
            try:
                await asyncio.wait_for(self._perform(action, element), self._action_budget(action))
                await self._settle(_expects_navigation(action, element, url_before))
            except TimeoutError:
                error = f"{action.kind} timed out"
                self._record("timeout", error, self.page.url)
                await self._stop_loading()
            except StaleElement as exc:
                error = str(exc)
            except PlaywrightError as exc:
                error = _first_line(exc)
                kind: EventKind = "timeout" if "Timeout" in error else "navigation_error"
                self._record(kind, error, action.url or self.page.url)
                if kind == "timeout":
                    await self._stop_loading()
            new_tab = await self._follow_popups()
        else:
            new_tab = None
        await self._await_recovery()
        if self.page.url.startswith("chrome-error://"):
            await self._leave_error_page(url_before)
        elif not in_scope(self.page.url, self.site.allowed_origins):  # a redirect route() never saw
            if self._op.refused_navigation != self.page.url:
                self.refused_navigations += 1
                self._op.refused_navigation = self.page.url
            self._record("refused", f"left the allowed origins for {self.page.url}", self.page.url)
            await self._leave_error_page(url_before)
        if error is None and (refused := self._op.refused_navigation):
            why = "policy forbids" if in_scope(refused, self.site.allowed_origins) else "out of scope"
            error = f"{why}: {refused}"
        faults = [e for e in self._op.events if e.kind in _FAULTS]
        if error is None and faults:
            error = faults[0].detail
        page_replaced = any(e.kind in ("crash", "dialog_flood") for e in faults)
        if not page_replaced and in_scope(self.page.url, self.site.allowed_origins):
            self._last_good_url = self.page.url
        return ActionOutcome(
            action=action,
            ok=error is None,
            error=error,
            url_before=url_before,
            url_after=self.page.url,
            status=self.status,
            new_tab=new_tab,
            navigation=self._op.nav_method if self._op.committed else None,
            dialogs=list(self._op.dialogs),
            events=list(self._op.events),
            seconds=time.monotonic() - self._op.started,
        )

    async def _leave_error_page(self, url_before: str) -> None:
        """Chromium's error page, or a page out of scope, is no state of the site: go back to where the action
        started."""
        try:
            await self.page.go_back(timeout=self.site.timeouts.navigation_ms, wait_until="load")
        except PlaywrightError:
            pass
        if self.page.url != url_before and in_scope(url_before, self.site.allowed_origins):
            try:
                await self.page.goto(url_before, timeout=self.site.timeouts.navigation_ms, wait_until="load")
            except PlaywrightError as exc:
                self._record("navigation_error", _first_line(exc), url_before)

    def _refusal(self, action: Action, obs: Observation | None) -> str | None:
        element = obs.element(action.mark) if obs and action.mark is not None else None
        if action.kind in _NEEDS_ELEMENT and element is None:
            return f"no element with mark {action.mark} on this observation"
        if element is not None:
            target = destination(element)
            reason = forbidden_reason(element, self.site.policy)
            if reason:
                leads = f", {element.method or 'GET'} {element.target}" if element.target else ""
                detail = f"policy forbids {action.label or element.name!r}{leads} (matches {reason!r})"
                self._record("refused", detail, target or self.page.url)
                return detail
            submits = element.target is not None and (action.kind == "click" or action.press_enter)
            if (action.kind == "click" and element.href or submits) and not in_scope(target, self.site.allowed_origins):
                self.refused_navigations += 1
                via = "link" if element.href else "form" if element.submits else "script"
                self._record("refused", f"{via} leaves the allowed origins: {target}", target)
                return f"out of scope: {target}"
        if action.kind == "goto" and not in_scope(action.url or "", self.site.allowed_origins):
            self.refused_navigations += 1
            self._record("refused", f"goto leaves the allowed origins: {action.url}", action.url or "")
            return f"out of scope: {action.url}"
        return None

    def _action_budget(self, action: Action) -> float:
        t = self.site.timeouts
        ms = t.navigation_ms if action.kind in ("goto", "back") else t.action_ms
        return ms / 1000 + 1.0

    async def _perform(self, action: Action, element: Element | None) -> None:
        page, t = self.page, self.site.timeouts
        if element is not None:
            await self._check_target(element)
        match action.kind:
            case "click":
                await page.mouse.click(*element.point)
            case "hover":
                await page.mouse.move(*element.point)
            case "type":
                await page.mouse.click(*element.point)
                await page.keyboard.press("ControlOrMeta+A")
                await page.keyboard.type(action.text or "")
                if action.press_enter:
                    await page.keyboard.press("Enter")
            case "select":
                x, y = element.point
                result = await page.evaluate(page_script("select"), {"x": x, "y": y, "option": action.option})
                if not result["ok"]:
                    raise PlaywrightError(result["error"])
            case "scroll":
                if element is not None:
                    await page.mouse.move(*element.point)
                step = self.site.viewport[1] * 0.8
                await page.mouse.wheel(0, -step if action.direction == "up" else step)
                await page.evaluate(_SCROLL_SETTLED)
            case "back":
                await page.go_back(timeout=t.navigation_ms, wait_until="load")
            case "goto":
                await page.goto(action.url, timeout=t.navigation_ms, wait_until="load")
            case "stop":
                pass

    async def _check_target(self, element: Element) -> None:
        """Refuse a stale mark: the element at its point must still be the one observed."""
        x, y = element.point
        hit = await self.page.evaluate(page_script("hit"), {"x": x, "y": y})
        if not hit or hit["path"] != element.path:
            found = hit["path"] if hit else "nothing"
            raise StaleElement(f"mark {element.mark} is stale: {found} is at its point now; observe again")

    async def _settle(self, expects_navigation: bool = False) -> None:
        """Wait until a navigation the action started has committed and loaded, within the nav timeout.

        An action that should navigate (a link, a form submission) waits for its request to appear, up to
        `expect_ms`: on a loaded machine the request can take longer than `settle_ms` to show up.
        """
        t = self.site.timeouts
        await asyncio.sleep(t.settle_ms / 1000)
        if expects_navigation and self._op.navigations == 0 and not self._op.committed:
            await self._next_change(t.expect_ms / 1000)
        deadline = self._op.started + t.navigation_ms / 1000
        while self._op.nav_pending:
            if self._op.navigations > self.site.policy.max_navigations_per_action:
                self._record("navigation_loop", f"more than {self._op.navigations - 1} navigations", self.page.url)
                await self._stop_loading()
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._record("timeout", f"navigation did not answer within {t.navigation_ms} ms", self.page.url)
                await self._stop_loading()
                return
            await self._next_change(remaining)
        if self._op.error_page_due:  # settle on the error page, so that the caller sees (and leaves) it
            await self._next_change(t.expect_ms / 1000)
        if self._op.committed:
            await self._wait_load(max(0.1, deadline - time.monotonic()))

    async def _next_change(self, seconds: float) -> None:
        """Wait up to `seconds` for the next navigation event of the action in progress."""
        self._op.changed.clear()
        try:
            await asyncio.wait_for(self._op.changed.wait(), seconds)
        except TimeoutError:
            pass

    async def _wait_load(self, seconds: float) -> None:
        try:
            await self.page.wait_for_load_state("load", timeout=seconds * 1000)
        except PlaywrightError as exc:
            if "Timeout" in str(exc):  # a closed or crashed page is recorded by its own handler
                self._record("timeout", f"page did not finish loading within {seconds:.1f} s", self.page.url)

    async def _stop_loading(self) -> None:
        try:  # a browser-level stop: window.stop() cannot cancel a navigation the browser already owns
            cdp = await self.context.new_cdp_session(self.page)
            await asyncio.wait_for(cdp.send("Page.stopLoading"), 2)
            await cdp.detach()
        except (TimeoutError, PlaywrightError):
            pass
        self._op.nav_pending = False

    async def _follow_popups(self) -> str | None:
        """Popups and new tabs: note their URL, close them, and follow an in-scope one in the main page."""
        followed = None
        for popup in self._op.popups:
            try:
                await popup.wait_for_load_state("load", timeout=self.site.timeouts.navigation_ms)
            except PlaywrightError:
                pass
            url = popup.url
            try:
                await popup.close(run_before_unload=False)
            except PlaywrightError:
                pass
            self._record("popup", f"opened {url}", url)
            if followed is None and url != "about:blank" and in_scope(url, self.site.allowed_origins):
                followed = url
        self._op.popups.clear()
        if followed:
            await self._perform(Action(kind="goto", url=followed), None)
        return followed

    async def _login(self) -> None:
        page = self.page
        for step in self.site.login:
            value = step.resolved_value()
            shown = "***" if step.is_secret else value
            try:
                match step.action:
                    case "goto":
                        await page.goto(step.url, wait_until="load")
                    case "fill":
                        await page.fill(step.selector, value or "")
                    case "click":
                        await page.click(step.selector)
                        await self._wait_load(self.site.timeouts.navigation_ms / 1000)
                    case "press":
                        await page.press(step.selector, value or "Enter")
                    case "wait_for":
                        await page.wait_for_selector(step.selector)
            except PlaywrightError as exc:
                msg = _first_line(exc).replace(value or "\0", "***") if step.is_secret else _first_line(exc)
                self._record("navigation_error", f"login step {step.action} {step.selector or ''} failed: {msg}")
                return
            log.debug("login step %s %s %s", step.action, step.selector, shown)

    # ---- page lifecycle and event handlers ---------------------------------------------------------------------
    async def _new_page(self) -> None:
        self._opening_page = True
        try:
            page = await self.context.new_page()
        finally:
            self._opening_page = False
        page.on("dialog", self._on_dialog)
        page.on("crash", self._on_crash)
        page.on("download", self._on_download)
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_request_failed)
        page.on("framenavigated", self._on_frame_navigated)
        self.page = page

    def _record(self, kind: EventKind, detail: str = "", url: str = "") -> None:
        event = BrowserEvent(kind=kind, detail=redact_text(detail, self._secrets), url=url)
        self.events.append(event)
        self._op.events.append(event)

    async def _guard(self, route: Route) -> None:
        request, url = route.request, route.request.url
        try:
            if not in_scope(url, self.site.allowed_origins):
                self._record("blocked_request", request.resource_type, url)
            elif self._policed and (
                reason := forbidden_request(url, request.method, self._is_main_nav(request), self.site.policy)
            ):
                self._record("blocked_request", f"policy forbids {request.method} (matches {reason!r})", url)
            else:
                await route.continue_()
                return
            self.blocked_requests += 1
            if route.request.is_navigation_request():
                # 204 No Content: the browser stays on the current page instead of showing an error page
                if self._is_main_nav(route.request):
                    self.refused_navigations += 1
                    self._op.refused_navigation = url
                    self._op.nav_pending = False
                    self._op.changed.set()
                await route.fulfill(status=204, body="")
            else:
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the page went away while the request was in flight

    async def _guard_ws(self, ws: WebSocketRoute) -> None:
        """WebSockets reach only the allowed origins (ws/wss count as http/https); others are closed unopened."""
        if in_scope(_http_form(ws.url), self.site.allowed_origins):
            ws.connect_to_server()
            return
        self.blocked_requests += 1
        self._record("blocked_request", "websocket", ws.url)
        await _quietly(ws.close(code=1008, reason="out of scope"))

    def _on_new_page(self, page: Page) -> None:
        if self._opening_page:
            return
        page.on("dialog", lambda d: asyncio.ensure_future(_quietly(d.dismiss())))
        self._op.popups.append(page)
        self._op.changed.set()  # a link that opened a tab will not navigate this page

    async def _on_dialog(self, dialog: Dialog) -> None:
        message = redact_text(dialog.message[:200], self._secrets)
        self._op.dialogs.append(message)
        self._record("dialog", f"{dialog.type}: {message}", self.page.url)
        if len(self._op.dialogs) > self.site.policy.max_dialogs_per_action:
            self._recover("dialog_flood", f"more than {self.site.policy.max_dialogs_per_action} dialogs in one action")
            return  # leave it open: the page is replaced
        dismiss = dialog.type == "prompt" or (
            dialog.type == "confirm" and self.site.policy.confirm_dialogs == "dismiss"
        )
        await _quietly(dialog.dismiss() if dismiss else dialog.accept())

    def _on_crash(self, page: Page) -> None:
        if page is self.page:
            self._recover("crash", "the renderer crashed")

    async def _on_download(self, download: Download) -> None:
        self._record("download", f"refused download {download.suggested_filename}", download.url)
        self._op.nav_pending = False
        self._op.changed.set()
        await _quietly(download.cancel())

    def _is_main_nav(self, request: Request) -> bool:
        try:
            return request.is_navigation_request() and request.frame == self.page.main_frame
        except PlaywrightError:
            return False

    def _on_request(self, request: Request) -> None:
        if self._is_main_nav(request):
            self._op.navigations += 1
            self._op.nav_method = request.method
            self._op.nav_pending = True
            self._op.changed.set()

    def _on_response(self, response: Response) -> None:
        if 300 <= response.status < 400 and (location := response.headers.get("location")):
            # context.route never sees the request a redirect makes: the host resolver stops other host names,
            # and an out-of-scope page that loads anyway (an IP literal) is left after the action (act)
            target = urljoin(response.url, location)
            if not in_scope(target, self.site.allowed_origins):
                self.blocked_requests += 1
                self._record("blocked_request", f"redirect from {response.url}", target)
                if self._is_main_nav(response.request):
                    self.refused_navigations += 1
                    self._op.refused_navigation = target
        if self._is_main_nav(response.request) and response.status in (204, 205):
            self._op.nav_pending = False  # no content: the page stays where it is
            self._op.changed.set()
        elif self._is_main_nav(response.request) and not 300 <= response.status < 400:
            self.status = response.status
            if response.status >= 400:
                self._record("http_error", f"HTTP {response.status}", response.url)

    def _on_request_failed(self, request: Request) -> None:
        if self._is_main_nav(request):
            failure = request.failure or "failed"
            # ERR_ABORTED: a download, a stop or a superseding navigation, recorded by their own handlers
            if request.url != self._op.refused_navigation and "ERR_ABORTED" not in failure:
                self._record("navigation_error", failure, request.url)
                self._op.error_page_due = True
            self._op.nav_pending = False
            self._op.changed.set()

    def _on_frame_navigated(self, frame) -> None:
        if frame == self.page.main_frame:
            self._op.committed = True
            self._op.error_page_due = False
            self._op.nav_pending = False
            self._op.changed.set()

    def _recover(self, kind: EventKind, detail: str) -> None:
        if self._recovery is None or self._recovery.done():
            self._record(kind, detail, self.page.url)
            self._recovery = asyncio.ensure_future(self._replace_page())

    async def _replace_page(self) -> None:
        old = self.page
        await _quietly(asyncio.wait_for(old.close(run_before_unload=False), 5))
        await self._new_page()
        self._op.nav_pending = False
        self.status = None
        if self._last_good_url:
            try:
                await self.page.goto(self._last_good_url, wait_until="load")
            except PlaywrightError as exc:
                self._record("navigation_error", _first_line(exc), self._last_good_url)

    async def _await_recovery(self) -> None:
        if self._recovery is not None:
            await self._recovery
            self._recovery = None


def _expects_navigation(action: Action, element: Element | None, url: str) -> bool:
    """Does this action normally load a document: a link to another page, or a form submission?"""
    if element is None:
        return False
    if action.kind == "click" and element.href:
        same_doc = element.href.split("#")[0] == url.split("#")[0] and "#" in element.href
        return not same_doc and not element.href.startswith("javascript:")
    return element.submits and (action.kind == "click" or (action.kind == "type" and action.press_enter))


async def _quietly(awaitable) -> None:
    try:
        await awaitable
    except (TimeoutError, PlaywrightError):
        pass


def _http_form(url: str) -> str:
    """A ws:// or wss:// URL as the http(s) URL of the same origin."""
    return re.sub(r"^ws(s?)://", r"http\1://", url, flags=re.IGNORECASE)


def _first_line(exc: BaseException | None) -> str:
    text = str(exc or "unknown error").strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
