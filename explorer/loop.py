"""The SCALE engine: the inner loop at a node (Selector -> Predictor -> act -> Transition -> Judger) and the
SCALE-Hop outer loop (stall -> verification -> backtrack to the nearest node not fully explored).

j=0 (wrong prediction): the ExploreRecord is stored and exploration continues from the new state.
j=1 (right prediction): the element counts as understood; the browser returns to the node and the Selector
picks again, at most `resample_tries` times in a row before the node counts as stalled.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from explorer.browser import BrowserSession
from explorer.budget import Budget
from explorer.candidates import action_for, usable_elements
from explorer.config import ExploreConfig, SiteConfig
from explorer.memory import TransitionMemory
from explorer.models import ChatModel
from explorer.novelty import rank_candidates, rarest_tier, signature
from explorer.pages import SitePages
from explorer.records import Action, Element, ExploreRecord, Observation, Prediction, Selection, Transition, Verdict
from explorer.restore import exhausted_nodes, tried_kinds
from explorer.returning import return_to
from explorer.roles import RoleStats, acted_name, predict_many, rule_verdict, select
from explorer.rows import RecordKind
from explorer.tracker import StateTracker, Step
from explorer.transition import diff, outcome_reasoning

A = TypeVar("A")
B = TypeVar("B")


@dataclass
class Engine:
    """What every worker of one run shares: configs, graph and store (via the tracker), model, budget."""

    site: SiteConfig
    cfg: ExploreConfig
    tracker: StateTracker
    model: ChatModel
    similarity: Callable[[str, str], float]
    budget: Budget
    run_id: str
    round: int = 0
    stats: RoleStats = field(default_factory=RoleStats)
    kinds: Counter = field(default_factory=Counter)  # element signatures tried anywhere in the run
    memory: TransitionMemory = field(default_factory=TransitionMemory)
    claims: dict[int, str] = field(default_factory=dict)  # worker -> the node it explores now
    exhausted: set[str] = field(default_factory=set)  # nothing untried left and verified once: not picked again
    pages: SitePages = field(default_factory=SitePages)  # the pages seen: what tells one apart, for the Judger
    rng: random.Random = field(default_factory=random.Random)
    _model_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.pages.site_name = self.site.name if self.site is not None else ""
        for node in self.tracker.graph.nodes():  # a resumed run knows its pages again
            self.pages.add(node.title)
        if self.tracker.next_step:  # ... and its novelty counts and exhausted nodes
            steps = self.tracker.store.steps()
            self.kinds.update(tried_kinds(steps))
            self.exhausted |= exhausted_nodes(self.tracker.store, self.tracker.graph, self.site, steps)

    async def call(self, fn, *args):
        """Run a model-calling role function off the event loop: one at a time, unless the model merges concurrent
        calls into batches itself (`BatchedModel`, for several browser contexts)."""
        if getattr(self.model, "merges_calls", False):
            return await asyncio.to_thread(fn, *args)

        def locked():
            with self._model_lock:
                return fn(*args)

        return await asyncio.to_thread(locked)

    async def predict(self, obs: Observation, selection: Selection, target: Element | None) -> Prediction:
        """The Predictor, shown the transition memory's hint when the run has one for this kind of action."""
        return (await self.predict_many(obs, [selection], [target]))[0]

    async def predict_many(
        self, obs: Observation, selections: list[Selection], targets: list[Element | None]
    ) -> list[Prediction]:
        """The Predictor on several actions at one observation, decoded in one batch (a node's verification)."""
        asks = [
            (sel.action, target, sel.reasoning, self.memory.hint(sel.action) if self.cfg.memory else None)
            for sel, target in zip(selections, targets, strict=True)
        ]
        return await self.call(lambda: predict_many(self.model, obs, asks, self.stats))

    def judge(self, prediction: Prediction, transition: Transition, action: Action) -> Verdict:
        """The fixed Judger (rule-based), against every page seen so far; the transition is remembered for hints."""
        self.memory.remember(action, transition)
        self.pages.add(transition.title_before)
        self.pages.add(transition.title_after, (transition.headings_after or [""])[0])
        return rule_verdict(prediction, transition, self.similarity, acted_name(action), pages=self.pages)

    def record(
        self,
        node_from: str,
        obs: Observation,
        selection: Selection,
        prediction: Prediction,
        transition: Transition,
        verdict: Verdict,
    ) -> Callable[[str], list[tuple[RecordKind, dict]]]:
        """The records of a step, as a function of the node it reaches (committed with the step)."""
        store, step = self.tracker.store, self.tracker.next_step
        screenshot, som = store.put_blob(obs.screenshot), store.put_blob(obs.som_screenshot)
        observation = store.put_observation(obs)

        def records(node_to: str) -> list[tuple[RecordKind, dict]]:
            rec = ExploreRecord(
                run_id=self.run_id,
                step=step,
                round=self.round,
                node_from=node_from,
                node_to=node_to,
                observation_text=obs.text,
                screenshot=screenshot,
                som_screenshot=som,
                observation=observation,
                url=obs.url,
                action=selection.action,
                selector_reasoning=selection.reasoning,
                transition=transition,
                outcome_reasoning=outcome_reasoning(selection.action.describe(), transition),
                prediction=prediction,
                verdict=verdict,
                model_id=self.model.model_id,
                adapter_id=self.model.adapter_id,
            )
            return [("understood" if verdict.correct else "failure", rec.model_dump(mode="json"))]

        return records

    def pick_node(self, worker: int, current: str) -> str | None:
        """Where `worker` explores next: here if it is still frontier, else the nearest frontier node that no
        other worker explores now; when every frontier node is taken, one shared with another worker (here if
        here is still frontier), so no context idles and the run ends only when the frontier is empty.
        Exhausted nodes are never picked again."""
        graph = self.tracker.graph
        taken = {node for w, node in self.claims.items() if w != worker} | self.exhausted
        here = graph.node(current)
        open_here = here.status != "full" and here.unreachable is None and current not in self.exhausted
        if open_here and current not in taken:
            return current
        found = graph.nearest_frontier(current, exclude=taken)
        if found is None and open_here:
            return current
        found = found or graph.nearest_frontier(current, exclude=self.exhausted)
        return found[0].id if found else None


async def run_worker(engine: Engine, session: BrowserSession) -> None:
    """One browser context's exploration: hop to a node, explore it, verify it, backtrack; until a budget ends."""
    tracker = engine.tracker
    step = await tracker.act(session, Action(kind="goto", url=engine.site.start_url), None, None, kind="start")
    node, obs = step.node_id, step.observation
    worker = id(session)
    try:
        while engine.budget.exhausted() is None:
            target = engine.pick_node(worker, node)
            if target is None:
                engine.budget.stop("frontier empty")
                break
            engine.budget.hops += 1
            engine.claims[worker] = target
            if target != node:
                back = await return_to(session, tracker, target, obs)
                if not back.ok:
                    node, obs = _last(back.steps, node, obs)
                    continue
                obs = back.observation
            node, obs = await explore_node(engine, session, target, obs)
    finally:
        engine.claims.pop(worker, None)


async def beside(predicting: Awaitable[A], acting: Awaitable[B]) -> tuple[A, B]:
    """Both results, the model's work (in its thread) and the browser's running at once; an error of either is
    raised once both are done, so no model call is left running behind a failed action."""
    results = await asyncio.gather(predicting, acting, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results[0], results[1]


def _last(steps: list[Step], node: str, obs: Observation) -> tuple[str, Observation]:
    return (steps[-1].node_id, steps[-1].observation) if steps else (node, obs)


async def explore_node(engine: Engine, session: BrowserSession, node: str, obs: Observation) -> tuple[str, Observation]:
    """SCALE's inner loop at `node` for up to K steps; returns where the browser ended up."""
    cfg, tracker, graph = engine.cfg, engine.tracker, engine.tracker.graph
    since_new, understood_in_row = 0, 0
    for _ in range(cfg.steps_per_hop):
        if engine.budget.exhausted():
            break
        here = graph.node(node)
        candidates = [e for e in usable_elements(obs, engine.site) if e.key not in here.tried]
        if not candidates:  # verified once; re-verifying with the same model would only spend steps
            engine.exhausted.add(node)
            return await verify_node(engine, session, node, obs)
        if since_new >= cfg.stall_steps or understood_in_row > cfg.resample_tries:
            return await verify_node(engine, session, node, obs)
        ranked = rarest_tier(rank_candidates(candidates, engine.kinds, engine.rng), engine.kinds)
        tried_names = [e.name for e in obs.elements if e.key in here.tried]
        selection = await engine.call(select, engine.model, obs, ranked, tried_names, engine.rng, engine.stats)
        target = obs.element(selection.action.mark)
        # the Predictor reads only the page before the action, so it decodes while the browser acts
        prediction, (outcome, after) = await beside(
            engine.predict(obs, selection, target), tracker.perform(session, selection.action, obs)
        )
        transition = diff(obs, after, outcome)
        verdict = engine.judge(prediction, transition, selection.action)
        engine.kinds[signature(target)] += 1
        records = engine.record(node, obs, selection, prediction, transition, verdict)
        step = tracker.commit(selection.action, outcome, after, node, verdict=verdict.correct, records=records)
        since_new = 0 if step.new_node else since_new + 1
        if not verdict.correct:  # j=0: a cognitive boundary; go on from the state it led to
            understood_in_row = 0
            node, obs = step.node_id, after
            if graph.node(node).status == "full" or node in engine.exhausted:  # nothing left there: hop elsewhere
                return node, obs
            engine.claims[id(session)] = node
            continue
        understood_in_row += 1  # j=1: nothing to learn here; back to the node, pick again
        if step.node_id == node:
            obs = after
            continue
        back = await return_to(session, tracker, node, after)
        if not back.ok:
            return _last(back.steps, step.node_id, after)
        obs = back.observation
    return node, obs


async def verify_node(engine: Engine, session: BrowserSession, node: str, obs: Observation) -> tuple[str, Observation]:
    """Predict N random actions at the node and check them: all right -> `full`, else `partial`."""
    tracker, graph = engine.tracker, engine.tracker.graph
    elements = usable_elements(obs, engine.site)
    sample = engine.rng.sample(elements, min(engine.cfg.verify_actions, len(elements)))
    all_right = True
    why = "verification: a random action"
    selections = [Selection(action=action_for(element, engine.rng, obs), reasoning=why) for element in sample]
    # the N predictions are made at the node before any of their actions, in one batch that decodes while the
    # browser runs the first action
    predicting = engine.predict_many(obs, selections, list(sample))
    if engine.budget.exhausted():
        predicting.close()
        return node, obs
    predictions, first = await beside(predicting, tracker.perform(session, selections[0].action, obs))
    for i, (selection, prediction) in enumerate(zip(selections, predictions, strict=True)):
        if i and engine.budget.exhausted():
            return node, obs
        outcome, after = first if i == 0 else await tracker.perform(session, selection.action, obs)
        transition = diff(obs, after, outcome)
        verdict = engine.judge(prediction, transition, selection.action)
        all_right &= verdict.correct
        records = engine.record(node, obs, selection, prediction, transition, verdict)
        step = tracker.commit(
            selection.action, outcome, after, node, kind="verify", verdict=verdict.correct, records=records
        )
        if step.node_id != node:
            back = await return_to(session, tracker, node, after)
            if not back.ok:
                graph.mark(node, "verified" if all_right else "refuted")
                tracker.store.put_nodes([graph.node(node)])
                return _last(back.steps, step.node_id, after)
            obs = back.observation
        else:
            obs = after
    tracker.store.put_nodes([graph.mark(node, "verified" if all_right else "refuted")])
    return node, obs
