"""The Actor and the world-model policy with the real embedded model on real Chromium observations of the bundled
sites: a parseable, executable action (or a recorded fallback), the mark's probability measured on the local
backend, the top-k candidates weighed by their predictions, and the tokens counted; the shortlist (real MiniLM)
shows a task's target that page order would have left out, live and in a dataset's prompt alike."""

from __future__ import annotations

import re

import pytest

from evals.policies import WorldModelPolicy, actionable, tokens_used
from evals.shots import demo_prompt
from explorer.models import ModelConfig, load_model
from explorer.observe import text_lines
from explorer.roles import RoleStats, act, parse_action
from explorer.roles.actor import MARKED, MAX_SHOWN
from explorer.roles.shortlist import shortlist


@pytest.fixture(scope="module")
def model():
    return load_model(ModelConfig())


async def test_the_actor_answers_a_real_page_with_an_executable_action(open_session, site_urls, model):
    session = await open_session("forum")
    obs = await session.observe()
    shown = actionable(obs, session.site)[:MAX_SHOWN]
    stats, before = RoleStats(), tokens_used(model)
    choice = act(model, "Open the most recent thread and read its first post", obs, shown, [], stats)
    assert stats.calls["actor"] == 1 and tokens_used(model) > before
    if choice.fallback:  # recorded, not raised: the first shown element's plausible action
        assert stats.fallbacks["actor"] == 1 and choice.action.mark == shown[0].mark
    else:
        assert parse_action(choice.raw, shown, obs.url)[0] == choice.action
    if choice.action.kind in MARKED:
        assert choice.action.mark in {el.mark for el in shown}
        if not choice.fallback:  # the local backend scores the marks: a probability, and a ranking of them all
            assert 0 < choice.confidence <= 1 and choice.ranking[0] == choice.action.mark
    if choice.action.kind != "stop":
        outcome = await session.act(choice.action, obs)  # the browser takes it as it is
        assert outcome.ok, outcome.error


async def test_the_world_model_takes_one_of_its_top_k_candidates(open_session, model, similarity):
    session = await open_session("shop")
    obs = await session.observe()
    policy = WorldModelPolicy(model, similarity, k=3, site=session.site)
    before = tokens_used(model)
    decision = await policy.decide("Find hiking boots in the footwear category", obs, [])
    assert decision.system == "world-model" and decision.tokens == tokens_used(model) - before > 0
    actions = [c.action for c in decision.considered if c.action.kind != "stop"]
    assert len(actions) == 3 and decision.action in [c.action for c in decision.considered]
    usable = {el.mark for el in actionable(obs, session.site)}
    assert all(a.mark in usable for a in actions)
    assert all(c.outcome.strip() and -1 <= c.value <= 1 for c in decision.considered)
    assert policy.actor.stats.calls["predictor"] == 3 and policy.actor.stats.calls["actor"] == 1
    best = max(decision.considered, key=lambda c: c.value)
    assert decision.action == best.action
    if decision.ranking:  # the Actor's pick (its likeliest mark) leads the candidates
        assert actions[0].mark == decision.ranking[0]


async def test_the_shortlist_shows_a_target_past_the_first_elements(open_session):
    """On the forum's start page the Book Club board comes after the first MAX_SHOWN elements in page order."""
    session = await open_session("forum")
    obs = await session.observe()
    usable = actionable(obs, session.site)
    lines = text_lines(obs.url, usable)
    target = next(i for i, line in enumerate(lines) if '"Book Club"' in line)
    assert target >= MAX_SHOWN, "the page changed: the test needs a target past the first elements"
    picked = shortlist("Open the Book Club board.", lines, MAX_SHOWN)
    assert picked[0] == target and len(picked) == MAX_SHOWN  # the closest line comes first
    prompt = demo_prompt("Open the Book Club board.", obs.text, mark=usable[target].mark)
    assert re.search(rf'^\[{usable[target].mark}\] link "Book Club"', prompt, re.MULTILINE)
    shown = [int(m) for m in re.findall(r"^\[(\d+)\]", prompt, re.MULTILINE)]
    assert shown == [usable[i].mark for i in picked]  # the dataset's prompt shows the live shortlist
