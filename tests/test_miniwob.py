"""MiniWoB++ from the installed `miniwob` package: its own pages and rewards, seen and driven by the explorer."""

from __future__ import annotations

import asyncio
import importlib.util
import re

import pytest

from evals.miniwob import (
    TASK_TYPES,
    MiniWoBEpisode,
    MiniWoBMissing,
    MiniWoBServer,
    miniwob_dir,
    miniwob_site,
    run_episode,
)
from explorer import Action, Element, Observation

SOLVED = ["click-button", "enter-text", "click-checkboxes"]


@pytest.fixture(scope="module")
def server():
    """The package's html folder served on 127.0.0.1."""
    with MiniWoBServer() as srv:
        yield srv


@pytest.fixture
async def session(chromium, server):
    """A browser session whose site is the MiniWoB server."""
    s = await chromium.new_session(server.site())
    yield s
    await s.close()


def _named(obs: Observation, role: str, name: str | None = None, *, other: bool = False) -> Element | None:
    """The first element with `role` whose name is `name` (with `other`: is not `name`)."""
    for el in obs.elements:
        if el.role == role and (name is None or (el.name == name) != other):
            return el
    return None


def scripted(wrong: bool = False):
    """A policy for click-button, enter-text and click-checkboxes that reads the intent and picks by text.

    With `wrong`, it does the task's action on the wrong target: another button, other text, the other boxes.
    """

    async def policy(intent: str, obs: Observation, history: list) -> Action | None:
        quoted = re.findall(r'"([^"]*)"', intent)
        if intent.startswith("Click on the"):  # click-button
            return Action.on(_named(obs, "button", quoted[0], other=wrong))
        if intent.startswith("Enter"):  # enter-text
            text = quoted[0][::-1] + "x" if wrong else quoted[0]
            box = _named(obs, "textbox")
            return (
                Action.on(box, "type", text=text) if box.value != text else Action.on(_named(obs, "button", "Submit"))
            )
        wanted = re.match(r"Select (.*) and click Submit", intent).group(1)
        names = [] if wanted == "nothing" else wanted.split(", ")
        for el in obs.elements:
            if el.role == "checkbox" and ((el.name in names) != wrong) != (el.value == "checked"):
                return Action.on(el)
        return Action.on(_named(obs, "button", "Submit"))

    return policy


async def _stop(intent: str, obs: Observation, history: list) -> Action | None:
    return None


async def _hover_first(intent: str, obs: Observation, history: list) -> Action | None:
    return Action.on(obs.elements[0], "hover")


async def test_every_task_type_loads_from_the_package_and_is_observed(session):
    assert len(TASK_TYPES) >= 20
    for task in TASK_TYPES:
        episode = await MiniWoBEpisode(session, task, 0).start()
        assert session.page.url.endswith(f"/miniwob/{task}.html")
        assert episode.intent and episode.time_limit_ms >= 10_000, task
        assert not await episode.done() and await episode.reward() == 0, task
        obs = await session.observe()
        inside = [e for e in obs.elements if e.point[0] <= 160 and e.point[1] <= 210]  # the task's #wrap
        assert inside, f"{task}: no element observed in the task area: {obs.text}"


@pytest.mark.parametrize("task", SOLVED)
async def test_scripted_policy_earns_the_tasks_own_reward_and_a_wrong_one_does_not(session, task):
    for seed in (0, 3):  # seeds whose page has a wrong target (click-button seed 1 has one button)
        good = await run_episode(session, task, seed, scripted(), max_steps=10)
        assert good.reason == "done" and good.success, good
        assert good.raw_reward == 1.0 and 0 < good.reward <= 1.0  # time-scaled by the task's own JS
        assert good.reward == await session.page.evaluate("WOB_REWARD_GLOBAL")
        assert good.actions and all(a.kind in ("click", "type") for a in good.actions)

        bad = await run_episode(session, task, seed, scripted(wrong=True), max_steps=10)
        assert bad.intent == good.intent
        assert bad.reason == "done" and not bad.success and bad.reward <= 0, bad
        assert bad.reward == await session.page.evaluate("WOB_REWARD_GLOBAL") == -1.0


async def test_a_seed_fixes_the_episode(session):
    first = await MiniWoBEpisode(session, "enter-text", 7).start()
    names = [e.name for e in (await session.observe()).elements]
    again = await MiniWoBEpisode(session, "enter-text", 7).start()
    assert again.intent == first.intent
    assert [e.name for e in (await session.observe()).elements] == names
    intents = {(await MiniWoBEpisode(session, "enter-text", seed).start()).intent for seed in range(4)}
    assert len(intents) > 1


async def test_episode_ends_on_stop_max_steps_and_the_tasks_time_limit(session):
    stopped = await run_episode(session, "click-button", 0, _stop, max_steps=5)
    assert (stopped.reason, stopped.steps, stopped.reward, stopped.success) == ("policy_stop", 0, 0.0, False)

    capped = await run_episode(session, "click-button", 0, _hover_first, max_steps=2)
    assert (capped.reason, capped.steps, capped.reward) == ("max_steps", 2, 0.0)
    assert [a.kind for a in capped.actions] == ["hover", "hover"]

    async def slow(intent: str, obs: Observation, history: list) -> Action | None:
        await asyncio.sleep(0.6)
        return Action.on(obs.elements[0], "hover")

    timed = await run_episode(session, "click-button", 0, slow, max_steps=20, time_limit_ms=500)
    assert timed.time_limit_ms == 500
    assert (timed.reason, timed.task_reason, timed.reward) == ("time_limit", "timed out", -1.0)


async def test_missing_package_and_unknown_task_name_the_fix(session, monkeypatch):
    assert (miniwob_dir() / "core" / "core.js").is_file()
    with pytest.raises(MiniWoBMissing, match="no MiniWoB task"):
        MiniWoBEpisode(session, "no-such-task", 0)
    outside = miniwob_site("http://127.0.0.1:9/elsewhere/")
    with pytest.raises(MiniWoBMissing, match="not in a MiniWoB"):
        MiniWoBEpisode(type("S", (), {"site": outside})(), "click-button", 0)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MiniWoBMissing, match=r"pip install --no-deps miniwob==1\.1\.0"):
        miniwob_dir()
