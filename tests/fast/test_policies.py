"""The Actor's grammar and the policies' decision rules, with a scripted fake ChatModel.

The fake is a stand-in on purpose: these are parser and decision-rule tests (every action form, repair then
fallback, confidence as a normalized probability, the world model's candidates and stop rule, the adaptive
switch rules, the random policy's seed), which need answers chosen on cue. The real embedded model and real
Chromium run the same code in tests/test_actor.py.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence

import pytest

from evals.policies import (
    ActorPolicy,
    AdaptivePolicy,
    RandomPolicy,
    WorldModelPolicy,
    history_lines,
    invalid_page,
    stuck,
)
from evals.policy import Decision, HistoryItem
from explorer.candidates import action_for, search_words
from explorer.models import Generation, Message, Usage, UsageMeter
from explorer.records import Action, Element, Observation
from explorer.roles import RoleStats, act, parse_action

URL = "http://shop.test/"


def el(mark: int, role: str, name: str, options: tuple[str, ...] = ()) -> Element:
    """A control of the fake page (geometry does not matter here)."""
    return Element(
        mark=mark, tag=role, role=role, name=name, options=options, bbox=(0, 0, 1, 1), point=(0, 0), key=f"k{mark}"
    )


ELEMENTS = [
    el(1, "link", "Jackets"),
    el(2, "link", "Boots"),
    el(3, "searchbox", "Search"),
    el(5, "combobox", "Sort by", ("Name", "Price")),
    el(12, "button", "Size guide"),
]


def obs(url: str = URL, status: int | None = 200, elements: Sequence[Element] = ELEMENTS) -> Observation:
    """An observation of the fake shop's home page."""
    return Observation(
        url=url,
        title="Tiny Shop",
        status=status,
        texts=["Free returns on boots."],
        elements=list(elements),
        screenshot=b"",
        som_screenshot=b"",
        text="",
        viewport=(640, 400),
    )


class FakeModel:
    """A ChatModel whose answers are scripted: `reply(messages)` (or the next of a list) continues the prefill;
    `choose` picks nothing (the Actor then writes its whole line after `ACTION:`), so the parser sees the script.
    Usage is metered for real."""

    model_id, adapter_id, sees_images = "fake", None, False

    def __init__(self, reply: Callable[[list[Message]], str] | Sequence[str]) -> None:
        self.replies = reply if callable(reply) else iter(reply).__next__
        self.script = callable(reply)
        self.meter = UsageMeter()
        self.prefills: list[str] = []

    def generate(self, messages, images=None, *, max_tokens=None, temperature=0.0, stop=None, role=None, **_):
        """The next scripted answer (after the prefill, which it does not repeat)."""
        self.prefills.append(messages[-1]["content"])
        text = self.replies(list(messages)) if self.script else self.replies()
        self.meter.record(role, [Usage(100, 10, 0.0)], 0.0)
        return Generation(text, Usage(100, 10, 0.0), "stop")

    def generate_batch(self, conversations, **kwargs):
        """One scripted answer per conversation."""
        return [self.generate(c, **kwargs) for c in conversations]

    def choose(self, messages, options, images=None, *, role=None, use_adapter=True):
        """No option: the role writes its answer itself."""
        self.meter.record(role, [Usage(100, 0, 0.0)], 0.0)
        return None

    def usage_report(self):
        """The meter's report."""
        return self.meter.report()


class ScoringFake(FakeModel):
    """A FakeModel that also scores options, like the local backend: log-weights from `weights` by option text
    (a missing option: -9), so the Actor's confidence and ranking are known in advance."""

    def __init__(self, reply, weights: dict[str, float]) -> None:
        super().__init__(reply)
        self.weights = weights

    def option_scores(self, messages, options, *, images=None, role=None, use_adapter=True):
        """Scripted log-weights of the options."""
        self.meter.record(role, [Usage(100, 0, 0.0)], 0.0)
        return [self.weights.get(o, -9.0) for o in options]

    def choose(self, messages, options, images=None, *, role=None, use_adapter=True):
        """The best-scored option (as the local backend's choose)."""
        scores = self.option_scores(messages, options, images=images, role=role)
        return max(range(len(options)), key=scores.__getitem__)


@pytest.mark.parametrize(
    "line,expected",
    [
        ("ACTION: click [12]", Action.on(ELEMENTS[4], "click")),
        ("action: click 2", Action.on(ELEMENTS[1], "click")),
        ('ACTION: type [3] "red shoes" enter', Action.on(ELEMENTS[2], "type", text="red shoes", press_enter=True)),
        ('ACTION: type [3] "red shoes"', Action.on(ELEMENTS[2], "type", text="red shoes")),
        ('ACTION: type [3] "red shoes', Action.on(ELEMENTS[2], "type", text="red shoes")),  # unclosed quote
        ('ACTION: select [5] "price"', Action.on(ELEMENTS[3], "select", option="Price")),
        ("ACTION: hover [1]", Action.on(ELEMENTS[0], "hover")),
        ("ACTION: scroll down", Action(kind="scroll", direction="down")),
        ("ACTION: scroll", Action(kind="scroll", direction="down")),
        ("ACTION: scroll [12] up", Action.on(ELEMENTS[4], "scroll", direction="up")),
        ("ACTION: back", Action(kind="back")),
        ("ACTION: goto /cart", Action(kind="goto", url="http://shop.test/cart")),
        ("ACTION: stop", Action(kind="stop")),
        ('ACTION: stop "42 EUR"', Action(kind="stop", answer="42 EUR")),
        ('Sure.\nACTION: stop "Boots"\nREASON: found', Action(kind="stop", answer="Boots")),
    ],
)
def test_every_action_form_parses(line, expected):
    action, reason = parse_action(line + "\nREASON: it fits the task", ELEMENTS, URL)
    assert action == expected
    assert reason in ("it fits the task", "found")


@pytest.mark.parametrize(
    "line",
    [
        "ACTION: click [7]",  # not a shown mark
        'ACTION: type [1] "x"',  # a link is no text field
        'ACTION: type [3] ""',  # nothing to type
        'ACTION: select [5] "Colour"',  # not one of its options
        "ACTION: select [5]",  # no option
        "ACTION: goto",  # no URL
        "ACTION: jump [1]",  # no such verb
        "click [1]",  # no ACTION line
    ],
)
def test_malformed_actions_do_not_parse(line):
    assert parse_action(line, ELEMENTS, URL) is None


def test_a_repair_then_the_recorded_fallback():
    stats = RoleStats()
    repaired = act(FakeModel([" I think jackets", " click [1]\nREASON: jackets"]), "buy", obs(), ELEMENTS, [], stats)
    assert (repaired.action, repaired.fallback, repaired.reasoning) == (Action.on(ELEMENTS[0]), False, "jackets")
    model = FakeModel([" no idea", " click [99]"])
    failed = act(model, "buy", obs(), ELEMENTS, [], stats)
    assert failed.fallback and failed.confidence is None
    assert failed.action == action_for(ELEMENTS[0], random.Random(0)) and failed.raw == "ACTION: click [99]"
    assert stats.report()["actor"] == {"calls": 2, "constrained": 0, "repairs": 2, "fallbacks": 1, "fallback_rate": 0.5}
    assert act(FakeModel(["?", "?"]), "buy", obs(elements=[]), [], []).action == Action(kind="stop")


def test_confidence_is_the_chosen_marks_normalized_probability():
    weights = {" click [": 0.0, "1": math.log(3), "2": 0.0, "]": math.log(2)}  # marks 1, 2 and 12
    model = ScoringFake(lambda m: " it is there", weights)
    choice = act(model, "jackets", obs(), ELEMENTS[:2] + ELEMENTS[4:], [])
    assert choice.action == Action.on(ELEMENTS[0]) and choice.reasoning == "it is there"
    # digit by digit: "1" 3/4 against "2"; then "]" 2/3 against "2" (mark 12): mark 1 1/2, mark 12 1/4, mark 2 1/4
    assert choice.confidence == pytest.approx(1 / 2) and choice.ranking == (1, 12, 2)
    assert model.prefills == ["ACTION: click [1]\nREASON:"]  # the mark is written for the model


def test_constrained_verbs_marks_and_options():
    def reply(messages):
        return 'red shoes" enter\nREASON: search' if messages[-1]["content"].endswith('"') else ' "Boots"'

    typing = act(ScoringFake(reply, {" type [": 0.0, "3]": 0.0}), "find red shoes", obs(), ELEMENTS, [])
    assert typing.action == Action.on(ELEMENTS[2], "type", text="red shoes", press_enter=True)
    assert typing.confidence == 1.0 and typing.ranking == (3,)  # the only text field
    model = ScoringFake(lambda m: " sorted", {" select [": 0.0, 'Price"': 1.0, 'Name"': 0.0})
    picked = act(model, "sort by price", obs(), ELEMENTS, [])
    assert picked.action == Action.on(ELEMENTS[3], "select", option="Price")
    stop = act(ScoringFake(reply, {" stop": math.log(4), " click [": 0.0}), "which boots?", obs(), ELEMENTS, [])
    assert stop.action == Action(kind="stop", answer="Boots") and stop.confidence == pytest.approx(4 / 5, abs=1e-3)
    assert stop.ranking == ()


def test_back_is_offered_only_after_a_step():
    model = ScoringFake(lambda m: " no", {" back": 5.0, " click [": 0.0, "1]": 0.0})
    assert act(model, "x", obs(), ELEMENTS[:1], []).action.kind == "click"
    assert act(model, "x", obs(), ELEMENTS[:1], ["click link"]).action == Action(kind="back")


async def test_the_actor_policy_counts_tokens_and_uses_shots():
    model = FakeModel(lambda m: " click [2]\nREASON: boots" if len(m) == 5 else " back")
    shots = [("Task: a\n...", "ACTION: click [1]")]
    policy = ActorPolicy(model, lambda intent, o: shots)
    decision = await policy.decide("boots", obs(), [])
    assert policy.name == "actor-few-shot" and decision.action == Action.on(ELEMENTS[1])
    assert decision.tokens == 100 + 110 and decision.system == "actor" and decision.confidence is None
    assert (await ActorPolicy(model).decide("boots", obs(), [])).action == Action(kind="back")  # zero-shot: 3


async def test_random_policy_is_deterministic_by_seed():
    async def walk(seed):
        policy = RandomPolicy(seed)
        return [(await policy.decide("x", obs(), [])).action for _ in range(8)]

    assert await walk(1) == await walk(1)
    assert await walk(1) != await walk(2)
    assert (await RandomPolicy(0).decide("x", obs(elements=[]), [])).action == Action(kind="stop")


def words(a: str, b: str) -> float:
    """A stand-in similarity: the share of shared words."""
    x, y = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return len(x & y) / max(1, len(x | y))


OUTCOMES = {"Jackets": "Navigates to Jackets page", "Boots": "Navigates to the boots page", "Size guide": "Appears"}


def predictor_reply(messages: list[Message]) -> str:
    """The Predictor's scripted outcome for the target shown in its prompt."""
    target = re.search(r'> \[\d+\] \w+ "([^"]+)"', messages[-2]["content"])
    return f" {OUTCOMES.get(target.group(1), 'Nothing') if target else 'Navigates to Previous page'}"


def world(actor_line: str, k: int = 2) -> WorldModelPolicy:
    """A world model whose Actor writes `actor_line` (after `ACTION:`) and whose Predictor answers from OUTCOMES."""

    def reply(messages):
        return actor_line if messages[-1]["content"] == "ACTION:" else predictor_reply(messages)

    return WorldModelPolicy(FakeModel(reply), words, k=k)


async def test_the_world_model_takes_the_best_predicted_outcome():
    decision = await world(" click [1]\nREASON: jackets").decide("show me boots page", obs(), [])
    assert decision.system == "world-model" and decision.action == Action.on(ELEMENTS[1])  # Boots, not Jackets
    assert [c.action.mark for c in decision.considered] == [1, 2]  # the Actor's pick, then by similarity
    assert decision.considered[1].outcome == "Navigates to the boots page" and decision.tokens > 0


async def test_the_world_model_skips_known_no_ops_and_goes_back_from_error_pages():
    history = [HistoryItem(action=Action.on(ELEMENTS[1]), url=URL, changed=False)]
    decision = await world(" click [2]").decide("show me boots page", obs(), history)
    assert 2 not in [c.action.mark for c in decision.considered]
    error = obs(status=404)
    decision = await world(" click [2]").decide("previous page", error, history)
    assert decision.action == Action(kind="back") and decision.considered[-1].outcome.startswith("Navigates to")


async def test_the_world_model_stops_only_when_the_actor_does_and_no_outcome_is_closer():
    stopped = await world(' stop "free returns"').decide("free returns on boots", obs(), [])
    assert stopped.action == Action(kind="stop", answer="free returns")
    assert stopped.considered[-1].outcome.startswith("Stays:")
    went = await world(' stop "x"').decide("the boots page", obs(), [])
    assert went.action == Action.on(ELEMENTS[1])
    assert (await world(" click [1]").decide("free returns on boots", obs(), [])).action.kind != "stop"
    nothing = await world(" back").decide("x", obs(elements=[]), [])
    assert nothing.action == Action(kind="stop") and nothing.considered == []


class Stub:
    """A scripted System 1 or System 2 for the adaptive switch rules."""

    def __init__(self, confidence: float | None = 0.9, fallback: bool = False, system="actor") -> None:
        self.confidence, self.fallback, self.system, self.calls = confidence, fallback, system, []

    async def decide(self, intent, obs, history):
        self.calls.append("decide")
        fields = {"confidence": self.confidence, "fallback": self.fallback, "system": self.system}
        return Decision(action=Action(kind="back"), tokens=7, **fields)

    async def rethink(self, intent, obs, history, first):
        self.calls.append("rethink")
        return Decision(action=Action(kind="scroll"), system="world-model", tokens=first.tokens + 5)


SAME = HistoryItem(action=Action.on(ELEMENTS[0]), url=URL, changed=False)


@pytest.mark.parametrize(
    "observation,history,actor,system,trigger",
    [
        (obs(), [], Stub(0.9), "actor", None),
        (obs(), [SAME, SAME], Stub(0.9), "actor", None),  # twice is not stuck
        (obs(), [SAME, SAME.model_copy(update={"changed": True}), SAME], Stub(0.9), "actor", None),
        (obs(), [SAME, SAME, SAME], Stub(0.9), "world-model", "stuck"),
        (obs(), [], Stub(0.3), "world-model", "low confidence 0.30"),
        (obs(), [], Stub(None), "actor", None),  # not measured: no doubt
        (obs(), [], Stub(0.9, fallback=True), "world-model", "actor fallback"),
        (obs(status=500), [], Stub(0.9), "world-model", "error page"),
        (obs(url="chrome-error://chromewebdata/", status=None), [], Stub(0.9), "world-model", "error page"),
    ],
)
async def test_the_adaptive_switch_rules(observation, history, actor, system, trigger):
    world_model = Stub(system="world-model")
    decision = await AdaptivePolicy(actor, world_model, low_confidence=0.4).decide("x", observation, history)
    assert (decision.system, decision.trigger) == (system, trigger)
    if system == "actor":
        assert world_model.calls == [] and decision.tokens == 7
    elif trigger in ("stuck", "error page"):
        assert actor.calls == [] and world_model.calls == ["decide"]  # straight to System 2
    else:
        assert world_model.calls == ["rethink"] and decision.tokens == 12  # both systems' tokens


def test_the_helpers():
    assert invalid_page(obs(status=404)) and not invalid_page(obs(status=None))
    assert stuck([SAME] * 3) and not stuck([SAME] * 2)
    assert history_lines([SAME]) == ['click link "Jackets" (no change)']


class BatchCounting(ScoringFake):
    """A ScoringFake that records each generate_batch call's size and grammar."""

    def __init__(self, reply, weights) -> None:
        super().__init__(reply, weights)
        self.batches: list[tuple[int, str | None]] = []

    def generate_batch(self, conversations, **kwargs):
        """Recorded, then answered one by one."""
        self.batches.append((len(conversations), kwargs.get("grammar")))
        return [self.generate(c, **kwargs) for c in conversations]


def test_a_nodes_verification_predictions_are_one_batch_per_outcome_kind():
    """predict_many (a node's N verification predictions) scores each kind, then generates the rest in one batch
    per kind, each under that kind's grammar; "Nothing visible changes." needs no generation."""
    from explorer.roles import RoleStats, predict_many
    from explorer.roles.predictor import rest_grammar

    weights = {' Navigates to "': 0.0, " Nothing visible changes.": -1.0}
    model = BatchCounting(lambda m: 'Jackets"\nREASON: a link', weights)
    asks = [(Action.on(e), e, "why", None) for e in ELEMENTS[:3]]
    stats = RoleStats()
    predictions = predict_many(model, obs(), asks, stats)
    assert [p.expected_title for p in predictions] == ["Jackets"] * 3 and all(p.navigates for p in predictions)
    assert model.batches == [(3, rest_grammar('OUTCOME: Navigates to "'))]  # one generation for all three
    assert stats.report()["predictor"]["calls"] == 3 and stats.report()["predictor"]["repairs"] == 0
    model = BatchCounting(lambda m: "x", {" Nothing visible changes.": 0.0})
    assert all(p.change == "Nothing visible changes." for p in predict_many(model, obs(), asks))
    assert model.batches == []


def test_search_fields_get_words_of_the_page():
    """A search field is typed a content word of the page's links and headings (what the site has results for),
    not the fixed fallback list; chrome words are skipped, and without a page the fallback list is used."""
    page = obs(elements=[*ELEMENTS, el(6, "link", "Sign in"), el(7, "link", "Timber Cooler")])
    page = page.model_copy(update={"headings": ["Camp Kitchen"]})
    assert search_words(page) == ["jackets", "boots", "timber", "cooler", "camp", "kitchen"]
    typed = {action_for(ELEMENTS[2], random.Random(seed), page).text for seed in range(40)}
    assert typed == set(search_words(page))
    action = action_for(ELEMENTS[2], random.Random(0), page)
    assert action.kind == "type" and action.press_enter
    assert action_for(ELEMENTS[2], random.Random(0)).text not in search_words(page)  # the fixed list, no page
    field = el(8, "textbox", "Your name")  # not a search field: the fixed list even with a page
    assert action_for(field, random.Random(0), page).text == action_for(field, random.Random(0)).text
