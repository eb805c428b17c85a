"""Agent policies for the evaluation harness (`evals.policy.Policy`): two floors (random, and the ranker: the
element closest to the task, no model), the Actor (zero- or few-shot), a world model after WMA (Chae et al., 2024)
and an adaptive two-system agent after CogniWeb.

Model calls run off the event loop (`asyncio.to_thread`). `Decision.tokens` is the growth of the model's usage
total over the decision, so a model shared with other concurrent work counts that work too.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evals.policy import Considered, Decision, HistoryItem, System
from explorer.candidates import action_for, usable_elements
from explorer.config import SiteConfig
from explorer.models import ChatModel
from explorer.observe import text_lines
from explorer.records import Action, Element, Observation
from explorer.roles import RoleStats, act, predict
from explorer.roles.shortlist import Embed, closest

Similarity = Callable[[str, str], float]
Shot = tuple[str, str]  # (prompt, answer): a demonstration in the Actor's own format
Shots = Callable[[str, Observation], Sequence[Shot]] | Sequence[Shot]
STUCK_REPEATS = 3


def actionable(obs: Observation, site: SiteConfig | None) -> list[Element]:
    """What a policy may act on: the site's usable elements, or every enabled one when no site is given."""
    return usable_elements(obs, site) if site is not None else [el for el in obs.elements if el.enabled]


def invalid_page(obs: Observation) -> bool:
    """An error page: an HTTP status of 400 or more, or Chromium's own error page after a failed navigation."""
    return (obs.status or 0) >= 400 or obs.url.startswith("chrome-error://")


def stuck(history: Sequence[HistoryItem], repeats: int = STUCK_REPEATS) -> bool:
    """The same action `repeats` times in a row, none of which changed the page."""
    last = history[-repeats:]
    return len(last) == repeats and all(h.action == last[0].action and not h.changed for h in last)


def history_lines(history: Sequence[HistoryItem]) -> list[str]:
    """The earlier steps as the Actor reads them: `click link "Laptops"` or `... (no change)`."""
    return [h.action.describe() + ("" if h.changed else " (no change)") for h in history]


def tokens_used(model: ChatModel) -> int:
    """The model's running total of tokens in and out (its usage accounting)."""
    total = model.usage_report().get("total", {})
    return int(total.get("prompt_tokens", 0) + total.get("completion_tokens", 0))


def _stop(reason: str, system: System) -> Decision:
    """Nothing to act on: stop (no model failure)."""
    return Decision(action=Action(kind="stop"), reasoning=reason, system=system)


class RandomPolicy:
    """The floor: a plausible action (`candidates.action_for`) on a random usable element; it stops only when
    there is nothing to act on. Deterministic for a seed."""

    name = "random"

    def __init__(self, seed: int = 0, *, site: SiteConfig | None = None) -> None:
        self.seed, self.rng = seed, random.Random(seed)
        self.site = site

    def begin_episode(self, task_id: str) -> None:
        """Reseed from (seed, task): a task's trajectory is the same whether or not the evaluation was resumed."""
        self.rng = random.Random(f"{self.seed}:{task_id}")

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """A random usable element's action, or stop when there is none."""
        usable = actionable(obs, self.site)
        if not usable:
            return _stop("nothing to act on", "random")
        el = self.rng.choice(usable)
        return Decision(action=action_for(el, self.rng), reasoning="random", system="random")


class RankerPolicy:
    """The ranking's floor, no model: every step, the plausible action (`candidates.action_for`) of the usable
    element closest to the intent, the first line of the Actor's shortlist; it stops only when there is nothing to
    act on. The Actor is shown its elements in this order, so this is what the ranking alone completes."""

    name = "ranker"

    def __init__(self, *, site: SiteConfig | None = None, embed: Embed | None = None) -> None:
        self.site, self.embed = site, embed

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """The closest usable element's action, or stop when there is none."""
        usable = actionable(obs, self.site)
        if not usable:
            return _stop("nothing to act on", "ranker")
        top = usable[closest(intent, text_lines(obs.url, usable), self.embed)[0]]
        return Decision(action=action_for(top, random.Random(0)), reasoning="closest to the task", system="ranker")


class ActorPolicy:
    """The Actor alone: zero-shot, or few-shot with `shots` (a list of (prompt, answer) demonstrations, or a
    callable `(intent, obs) -> demonstrations`, e.g. a retriever)."""

    def __init__(
        self,
        model: ChatModel,
        shots: Shots | None = None,
        *,
        site: SiteConfig | None = None,
        stats: RoleStats | None = None,
    ) -> None:
        self.model, self.shots, self.site = model, shots, site
        self.stats = stats or RoleStats()
        self.name = "actor-few-shot" if shots else "actor"

    def demonstrations(self, intent: str, obs: Observation) -> list[Shot]:
        """The shots for this step (none for zero-shot)."""
        if self.shots is None:
            return []
        return list(self.shots(intent, obs) if callable(self.shots) else self.shots)

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """The Actor's action, confidence and ranking; a fallback is marked (a failed step)."""
        before = tokens_used(self.model)
        choice = await asyncio.to_thread(
            act,
            self.model,
            intent,
            obs,
            actionable(obs, self.site),
            history_lines(history),
            self.stats,
            shots=self.demonstrations(intent, obs),
        )
        return Decision(
            action=choice.action,
            reasoning=choice.reasoning,
            confidence=choice.confidence,
            fallback=choice.fallback,
            system="actor",
            tokens=tokens_used(self.model) - before,
            ranking=list(choice.ranking),
        )


@dataclass(frozen=True)
class _Candidate:
    action: Action
    target: Element | None
    reasoning: str


class WorldModelPolicy:
    """After WMA: the Predictor imagines the outcome of each of the top-k candidate actions, and the one whose
    predicted outcome is closest to the intent (embedding similarity: the value) is taken.

    Candidates: the Actor's pick and its ranked marks (its own action for its pick, `action_for` for the others),
    filled up with the usable elements whose text is closest to the intent; actions that already left this page
    unchanged are skipped; on an error page `back` is a candidate too.
    Stop rule: the world model never stops on its own, only when the Actor proposes `stop`; the current page is
    then weighed as one more candidate (its own similarity to the intent), and the episode stops only if no
    predicted outcome is closer to the task than the page already is. With nothing to act on, it stops.
    """

    name = "world-model"

    def __init__(
        self,
        model: ChatModel,
        similarity: Similarity,
        k: int = 3,
        *,
        actor: ActorPolicy | None = None,
        site: SiteConfig | None = None,
        seed: int = 0,
    ) -> None:
        self.model, self.similarity, self.k, self.site = model, similarity, k, site
        self.actor = actor or ActorPolicy(model, site=site)
        self.rng = random.Random(seed)

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """Ask the Actor, then weigh its top-k candidates by their predicted outcomes."""
        return await self.rethink(intent, obs, history, await self.actor.decide(intent, obs, history))

    async def rethink(self, intent: str, obs: Observation, history: list[HistoryItem], first: Decision) -> Decision:
        """Weigh the candidates around the Actor's decision `first` (its tokens are counted in the result)."""
        before = tokens_used(self.model)
        considered = await asyncio.to_thread(self.weigh, intent, obs, history, first)
        tokens = first.tokens + tokens_used(self.model) - before
        if not considered:
            return _stop("nothing to act on", "world-model").model_copy(update={"tokens": tokens})
        best = max(considered, key=lambda c: c.value)  # ties: the earlier (Actor-ranked) candidate
        return Decision(
            action=best.action,
            reasoning=f"world model: {best.outcome[:160]} (value {best.value:.2f})",
            confidence=first.confidence if best.action == first.action else None,
            fallback=all(c.fallback for c in considered),
            system="world-model",
            tokens=tokens,
            ranking=first.ranking,
            considered=considered,
        )

    def weigh(self, intent: str, obs: Observation, history: list[HistoryItem], first: Decision) -> list[Considered]:
        """Each candidate with its predicted outcome and value; the current page too when the Actor said stop."""
        out = []
        for c in self.candidates(intent, obs, history, first):
            p = predict(self.model, obs, c.action, c.target, c.reasoning, self.actor.stats)
            value = self.similarity(p.change, intent)
            out.append(Considered(action=c.action, outcome=p.change, value=value, fallback=p.fallback))
        if first.action.kind == "stop":
            here = page_text(obs)
            out.append(Considered(action=first.action, outcome="Stays: " + here, value=self.similarity(here, intent)))
        return out

    def candidates(
        self, intent: str, obs: Observation, history: list[HistoryItem], first: Decision
    ) -> list[_Candidate]:
        """The top-k element actions (see the class doc), plus `back` on an error page after an earlier step."""
        usable = actionable(obs, self.site)
        by_mark = {el.mark: el for el in usable}
        noops = {(h.action.kind, h.action.mark) for h in history if not h.changed and h.url == obs.url}
        marks = dict.fromkeys([first.action.mark, *first.ranking])  # the Actor's pick first, then its ranking
        ranked = [by_mark[m] for m in marks if m in by_mark]
        out = self._actions(ranked, first, noops)
        if len(out) < self.k:
            rest = [el for el in usable if el not in ranked]
            rest.sort(key=lambda el: -self.similarity(el.name or el.role, intent))
            out += self._actions(rest, first, noops)
        out = out[: self.k]
        if invalid_page(obs) and history:
            out.append(_Candidate(Action(kind="back"), None, "the page is an error page"))
        return out

    def _actions(self, elements: list[Element], first: Decision, noops: set) -> list[_Candidate]:
        """An action per element (the Actor's own on its pick), except those known to do nothing here."""
        out = []
        for el in elements:
            mine = first.action.mark == el.mark
            action = first.action if mine else action_for(el, self.rng)
            if (action.kind, action.mark) not in noops:
                out.append(_Candidate(action, el, first.reasoning if mine else ""))
        return out


def page_text(obs: Observation) -> str:
    """The page as one short text: title, first headings and first text blocks."""
    return " ".join([obs.title, *obs.headings[:2], *obs.texts[:3]])[:500]


class AdaptivePolicy:
    """After CogniWeb: the Actor acts (System 1) unless the world model should (System 2): when the agent is
    stuck (the same action STUCK_REPEATS times without effect), the page is an error page, the Actor's answer
    did not parse, or its confidence is below `low_confidence`. `Decision.system` and `trigger` say which
    and why; the tokens of both systems are counted."""

    name = "adaptive"

    def __init__(self, actor: ActorPolicy, world_model: WorldModelPolicy, low_confidence: float = 0.4) -> None:
        self.actor, self.world_model, self.low_confidence = actor, world_model, low_confidence

    async def decide(self, intent: str, obs: Observation, history: list[HistoryItem]) -> Decision:
        """System 1 by default; System 2 on a trigger (see the class doc)."""
        trigger = "error page" if invalid_page(obs) else "stuck" if stuck(history) else None
        if trigger:
            decision = await self.world_model.decide(intent, obs, history)
            return decision.model_copy(update={"trigger": trigger})
        first = await self.actor.decide(intent, obs, history)
        trigger = self.doubt(first)
        if trigger is None:
            return first
        decision = await self.world_model.rethink(intent, obs, history, first)
        return decision.model_copy(update={"trigger": trigger})

    def doubt(self, first: Decision) -> str | None:
        """Why the Actor's own decision is not taken: a fallback or low confidence (None: it is taken)."""
        if first.fallback:
            return "actor fallback"
        if first.confidence is not None and first.confidence < self.low_confidence:
            return f"low confidence {first.confidence:.2f}"
        return None


POLICIES = ("actor", "world-model", "adaptive", "random", "ranker")
FLOORS = ("random", "ranker")  # the policies that need no model


def make_policy(name: str, model: ChatModel | None, similarity: Similarity | None, shots: Shots | None = None, seed=0):
    """The policy named `name` (one of POLICIES) on `model`; the world model's Actor shares `shots`."""
    if name in FLOORS:
        return RandomPolicy(seed=seed) if name == "random" else RankerPolicy()
    if model is None:
        raise ValueError(f"policy {name!r} needs a model")
    actor = ActorPolicy(model, shots=shots)
    if name == "actor":
        return actor
    world = WorldModelPolicy(model, similarity, actor=actor, seed=seed)
    if name == "world-model":
        return world
    if name == "adaptive":
        return AdaptivePolicy(actor, world)
    raise ValueError(f"unknown policy {name!r}: one of {', '.join(POLICIES)}")
