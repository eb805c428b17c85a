"""Replay validation of multi-step tasks: re-execute each action sequence in a fresh browser context from the
reset start state, and keep the task only if it ends in its target state, by the state identity the explorer
used (explorer.identity: same normalized URL, same structure, canonical SSIM >= delta; typed values, focus
rings, validation bubbles and relative times do not count).

Actions are re-resolved by element key on each new observation (as return-to-node does), so marks need not
match. Every drop says which step failed, or which test of identity told the final state from the target
(`cause`). The old rule (URL and raw-screenshot SSIM >= delta) is scored beside it (`Replay.raw_ok`), so its
pass rate can be reported next to the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from explorer.browser import Chromium, ObserveError
from explorer.config import BrowserConfig, SiteConfig
from explorer.dedup import normalize_url, ssim, thumbnail
from explorer.errors import SiteUnreachable
from explorer.identity import compare, of_node, of_observation
from explorer.records import Action, Node, Observation
from synthesis.records import Drop, MultiStepTask, ReplayCause

Lookup = Callable[[str], tuple[Node, bytes]]  # node id -> the stored node and its screenshot


@dataclass
class Replay:
    """How one replay went: reached or not, the final canonical SSIM, and why not (`cause`: which test)."""

    ok: bool
    ssim: float | None = None
    reason: str = ""
    cause: ReplayCause | None = None
    raw_ok: bool = False  # would the old rule (URL + raw SSIM >= delta at start and goal) have kept it?


class _Failed(Exception):
    def __init__(self, message: str, cause: ReplayCause):
        super().__init__(message)
        self.cause = cause


async def replay_task(
    chromium: Chromium, site: SiteConfig, task: MultiStepTask, lookup: Lookup, delta: float
) -> Replay:
    """Replay one task in a new browser context; `lookup` gives a node of the task's run and its screenshot."""
    session = await chromium.new_session(site)
    start_id, goal_id = task.lineage.node_ids[0], task.lineage.node_ids[-1]
    raw = [False, False]
    try:
        await session.reset()
        obs = await _load(session, task.start_url)
        raw[0] = _expect(site, obs, lookup(start_id), delta, f"the start page {task.start_url}")[1]
        for i, step in enumerate(task.steps, 1):
            element = next((e for e in obs.elements if e.key == step.action.element_key), None)
            if element is None and step.action.element_key:
                raise _Failed(f"step {i} ({step.action_text}): the element is not on the page", "element missing")
            action = step.action.model_copy(update={"mark": element.mark}) if element else step.action
            outcome = await session.act(action, obs)
            if not outcome.ok:
                raise _Failed(f"step {i} ({step.action_text}) failed: {outcome.error}", "action failed")
            obs = await session.observe()
        score, raw[1] = _expect(site, obs, lookup(goal_id), delta, "the final state")
        return Replay(True, score, raw_ok=all(raw))
    except _Failed as exc:
        return Replay(False, None, str(exc), exc.cause)
    except ObserveError as exc:
        return Replay(False, None, f"the browser could not follow the task: {exc}", "browser")
    except SiteUnreachable as exc:
        raise SiteUnreachable(f"{exc} Replay validation needs the run's site; or build with --no-replay.") from None
    finally:
        await session.close()


async def _load(session, url: str) -> Observation:
    outcome = await session.act(Action(kind="goto", url=url))
    if not outcome.ok:
        raise _Failed(f"loading {url} failed: {outcome.error}", "action failed")
    return await session.observe()


def _expect(
    site: SiteConfig, obs: Observation, target: tuple[Node, bytes], delta: float, what: str
) -> tuple[float, bool]:
    """Is `obs` the recorded state? (canonical SSIM, whether the old raw-pixel rule agrees); raises _Failed if not."""
    node, png = target
    url = normalize_url(obs.url, ignore_params=site.ignore_params, keep_fragment=site.keep_fragment)
    raw_ok = url == node.url and ssim(thumbnail(obs.screenshot), thumbnail(png)) >= delta
    verdict = compare(of_observation(obs, url), of_node(node, png), delta)
    if verdict.reason == "url":
        raise _Failed(f"{what} is at {obs.url}, not {node.raw_url}", "url")
    if verdict.reason == "structure":
        theirs, ours = set(node.element_keys), {e.key for e in obs.elements}
        more, fewer = len(ours - theirs), len(theirs - ours)
        raise _Failed(f"{what} offers other controls ({more} not recorded, {fewer} recorded missing)", "structure")
    if not verdict.same:
        raise _Failed(f"{what} differs from the recorded one (SSIM {verdict.score:.4f} < delta {delta})", "pixels")
    return verdict.score, raw_ok


async def replay_gate(
    tasks: list[MultiStepTask],
    sites: dict[int, SiteConfig],
    lookups: dict[int, Lookup],
    deltas: dict[int, float],
    browser: BrowserConfig,
) -> tuple[list[MultiStepTask], list[Drop]]:
    """Replay every task (one Chromium per run, a fresh context per task); keep those that reach their target.

    `sites`, `lookups` and `deltas` are keyed by the task's `source` (the run it came from).
    """
    kept, drops = [], []
    for source in sorted({t.source for t in tasks}):
        site = sites[source]
        async with await Chromium.launch(browser, site.allowed_origins) as chromium:
            for task in (t for t in tasks if t.source == source):
                result = await replay_task(chromium, site, task, lookups[source], deltas[source])
                if result.ok:
                    kept.append(task.model_copy(update={"replay_ssim": result.ssim}))
                else:
                    why = {"reason": result.reason, "site": task.site, "cause": result.cause}
                    drops.append(Drop(id=task.id, task_type="multi_step", gate="replay", **why))
    return kept, drops
