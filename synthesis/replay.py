"""Replay validation of multi-step tasks: re-execute each action sequence in a fresh browser context from the
reset start state, and keep the task only if it ends in its target state (same normalized URL, SSIM >= delta).

Actions are re-resolved by element key on each new observation (as return-to-node does), so marks need not
match. Every drop says which step failed, or how far the final state was from the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from explorer.browser import Chromium, ObserveError
from explorer.config import BrowserConfig, SiteConfig
from explorer.dedup import normalize_url, ssim, thumbnail
from explorer.errors import SiteUnreachable
from explorer.records import Action, Observation
from synthesis.records import Drop, MultiStepTask


@dataclass
class Replay:
    """How one replay went: reached or not, the final SSIM against the target, and why not."""

    ok: bool
    ssim: float | None = None
    reason: str = ""


class _Failed(Exception):
    pass


async def replay_task(
    chromium: Chromium, site: SiteConfig, task: MultiStepTask, blob: Callable[[str], bytes], delta: float
) -> Replay:
    """Replay one task in a new browser context; `blob` returns a screenshot's PNG bytes by digest."""
    session = await chromium.new_session(site)
    try:
        await session.reset()
        obs = await _load(session, task.start_url)
        start = task.steps[0]
        _expect(site, obs, start.url, blob(start.screenshot), delta, f"the start page {task.start_url}")
        for i, step in enumerate(task.steps, 1):
            element = next((e for e in obs.elements if e.key == step.action.element_key), None)
            if element is None and step.action.element_key:
                raise _Failed(f"step {i} ({step.action_text}): the element is not on the page")
            action = step.action.model_copy(update={"mark": element.mark}) if element else step.action
            outcome = await session.act(action, obs)
            if not outcome.ok:
                raise _Failed(f"step {i} ({step.action_text}) failed: {outcome.error}")
            obs = await session.observe()
        score = _expect(site, obs, task.goal_url, blob(task.goal_screenshot), delta, "the final state")
        return Replay(True, score)
    except _Failed as exc:
        return Replay(False, None, str(exc))
    except ObserveError as exc:
        return Replay(False, None, f"the browser could not follow the task: {exc}")
    except SiteUnreachable as exc:
        raise SiteUnreachable(f"{exc} Replay validation needs the run's site; or build with --no-replay.") from None
    finally:
        await session.close()


async def _load(session, url: str) -> Observation:
    outcome = await session.act(Action(kind="goto", url=url))
    if not outcome.ok:
        raise _Failed(f"loading {url} failed: {outcome.error}")
    return await session.observe()


def _expect(site: SiteConfig, obs: Observation, url: str, png: bytes, delta: float, what: str) -> float:
    """The SSIM of `obs` against the recorded screenshot; raises _Failed when URL or SSIM disagree."""
    norm = {"ignore_params": site.ignore_params, "keep_fragment": site.keep_fragment}
    if normalize_url(obs.url, **norm) != normalize_url(url, **norm):
        raise _Failed(f"{what} is at {obs.url}, not {url}")
    score = ssim(thumbnail(obs.screenshot), thumbnail(png))
    if score < delta:
        raise _Failed(f"{what} differs from the recorded one (SSIM {score:.4f} < delta {delta})")
    return score


async def replay_gate(
    tasks: list[MultiStepTask],
    sites: dict[int, SiteConfig],
    blobs: dict[int, Callable[[str], bytes]],
    deltas: dict[int, float],
    browser: BrowserConfig,
) -> tuple[list[MultiStepTask], list[Drop]]:
    """Replay every task (one Chromium per run, a fresh context per task); keep those that reach their target.

    `sites`, `blobs` and `deltas` are keyed by the task's `source` (the run it came from).
    """
    kept, drops = [], []
    for source in sorted({t.source for t in tasks}):
        site = sites[source]
        async with await Chromium.launch(browser, site.allowed_origins) as chromium:
            for task in (t for t in tasks if t.source == source):
                result = await replay_task(chromium, site, task, blobs[source], deltas[source])
                if result.ok:
                    kept.append(task.model_copy(update={"replay_ssim": result.ssim}))
                else:
                    drops.append(Drop(id=task.id, task_type="multi_step", gate="replay", reason=result.reason))
    return kept, drops
