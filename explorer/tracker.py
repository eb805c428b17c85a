"""Every browser action as a committed step: act, observe, identify the state, update graph and store.

The tracker is the one path from the browser to the graph and the store, shared by the SCALE engine,
the baselines and return-to-node. One step = one browser action = one transaction.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from explorer.browser import BrowserSession, ObserveError
from explorer.dedup import Match, StateIndex, normalize_url
from explorer.errors import SiteUnreachable
from explorer.graph import ExplorationGraph
from explorer.identity import Identity, of_node, of_observation
from explorer.records import Action, ActionOutcome, Node, Observation
from explorer.rows import RecordKind, StepKind
from explorer.store import RunStore

Records = Sequence[tuple[RecordKind, dict]] | Callable[[str], Sequence[tuple[RecordKind, dict]]]
# Actions that teleport rather than interact: stored as steps, never as graph edges to replay.
_NO_EDGE = ("goto", "back", "stop")


@dataclass
class Step:
    """One committed step: the action, its outcome, the state it reached."""

    step: int
    action: Action
    outcome: ActionOutcome
    observation: Observation
    node_id: str
    new_node: bool
    match: Match
    records: list[str] = field(default_factory=list)


class StateTracker:
    """Owns state identity for a run and commits each step's writes in one transaction."""

    def __init__(
        self, store: RunStore, graph: ExplorationGraph, *, delta: float, ignore_params=(), keep_fragment=False
    ):
        self.store = store
        self.graph = graph
        self.index = StateIndex(delta)
        self._norm = {"ignore_params": tuple(ignore_params), "keep_fragment": keep_fragment}
        for node in graph.nodes():
            self._register(node.id, of_node(node, store.blob(node.screenshot)))
        self.next_step = store.last_step() + 1
        self.timings: Counter = Counter()  # seconds spent per part: act, observe, dedup, graph, store
        self.unreachable_streak = 0  # steps in a row whose action could not reach the site (the site is down?)
        # the run's accounting (meta key -> value), written with every step's transaction when set
        self.accounting: Callable[[], dict[str, object]] | None = None

    def normalize(self, url: str) -> str:
        """The run's normalized form of a URL."""
        return normalize_url(url, **self._norm)

    def identity(self, obs: Observation) -> Identity:
        """The observation's state identity under this run's URL normalization (see explorer.identity)."""
        return of_observation(obs, self.normalize(obs.url))

    def identify(self, obs: Observation) -> Match:
        """Which known node this observation shows (node_id None: a new state)."""
        return self._match(self.identity(obs))

    def _match(self, identity: Identity) -> Match:
        return self.index.identify(identity.bucket, identity.thumb, identity.overlays)

    def _register(self, node_id: str, identity: Identity) -> None:
        self.index.add(node_id, identity.bucket, identity.thumb, identity.overlays)

    async def perform(
        self, session: BrowserSession, action: Action, obs: Observation | None
    ) -> tuple[ActionOutcome, Observation]:
        """Run `action` and observe the result; an unobservable page sends the browser back to the start."""
        t0 = time.perf_counter()
        outcome = await session.act(action, obs)
        t1 = time.perf_counter()
        self.timings["act"] += t1 - t0
        try:
            after = await session.observe()
            self.timings["observe"] += time.perf_counter() - t1
            return outcome, after
        except ObserveError as exc:  # go back to the start page; if even that fails, the site is down
            restart = await session.act(Action(kind="goto", url=session.site.start_url))
            try:
                after = await session.observe()
            except ObserveError:
                raise SiteUnreachable(f"{exc}; the start page {session.site.start_url} failed too") from None
            error = f"{exc} (returned to the start page)"
            events = outcome.events + restart.events
            update = {"ok": False, "error": error, "events": events, "url_after": after.url}
            return outcome.model_copy(update=update), after

    async def act(
        self,
        session: BrowserSession,
        action: Action,
        obs: Observation | None,
        node_from: str | None,
        *,
        kind: StepKind = "select",
    ) -> Step:
        """Perform `action`, observe the result, and commit the step atomically."""
        outcome, after = await self.perform(session, action, obs)
        return self.commit(action, outcome, after, node_from, kind=kind)

    def commit(
        self,
        action: Action,
        outcome: ActionOutcome,
        after: Observation,
        node_from: str | None,
        *,
        kind: StepKind = "select",
        records: Records = (),
        verdict: bool | None = None,
    ) -> Step:
        """Place `after` in the graph and write node, edge, step, events and records in one transaction.

        `records` may be a function of the id of the node reached, for records that name it.
        """
        t0 = time.perf_counter()
        identity = self.identity(after)
        match = self._match(identity)
        t1 = time.perf_counter()
        self.timings["dedup"] += t1 - t0
        new = match.node_id is None
        if new:
            node = self._new_node(after, identity.url, action, outcome, node_from)
        else:
            known = self.graph.node(match.node_id)
            node = known.model_copy(update={"visits": known.visits + 1})
        self.graph.add_node(node)
        touched = [node]
        if node_from is not None and action.element_key:
            src = self.graph.node(node_from)
            if action.element_key not in src.tried:
                self.graph.update(node_from, tried=[*src.tried, action.element_key])
            touched.append(self.graph.mark(node_from, "tried"))
        edge = None
        if node_from is not None and action.kind not in _NO_EDGE and outcome.ok:
            edge = self.graph.add_edge(node_from, node.id, action, verdict)
        step_no = self.next_step
        t2 = time.perf_counter()
        self.timings["graph"] += t2 - t1
        with self.store.step(step_no) as tx:
            for n in touched:
                tx.node(n)
            if edge is not None:
                tx.edge(edge)
            outcome_json = outcome.model_dump(mode="json", exclude={"action"})
            tx.action(node_from, node.id, action.model_dump(mode="json"), outcome_json, kind)
            for event in outcome.events:
                tx.event(event.kind, event.detail, event.url)
            pending = records(node.id) if callable(records) else records
            ids = [tx.record(rec_kind, rec, node_from, node.id) for rec_kind, rec in pending]
            for key, value in (self.accounting() if self.accounting else {}).items():
                tx.meta(key, value)
        self.next_step += 1
        self.timings["store"] += time.perf_counter() - t2
        down = any(e.kind == "navigation_error" and "net::ERR_" in e.detail for e in outcome.events)
        self.unreachable_streak = self.unreachable_streak + 1 if down else 0
        if new:
            self._register(node.id, identity)
        return Step(step_no, action, outcome, after, node.id, new, match, ids)

    def _new_node(
        self, obs: Observation, url: str, action: Action, outcome: ActionOutcome, node_from: str | None
    ) -> Node:
        digest = self.store.put_blob(obs.screenshot)  # before the transaction: an orphan blob is harmless
        observation = self.store.put_observation(obs)
        if action.kind == "goto" and outcome.ok:
            addressable = True
        elif outcome.navigation == "GET":
            addressable = None  # probably: verified on the first return
        else:
            addressable = False  # same-document change or a POST result: reload would not reproduce it
        depth = self.graph.node(node_from).depth + 1 if node_from is not None else 0
        return Node(
            id=f"n{len(self.graph.g)}",
            url=url,
            raw_url=obs.url,
            title=obs.title,
            screenshot=digest,
            observation=observation,
            element_keys=[e.key for e in obs.elements],
            volatile=obs.volatile,
            overlays=obs.overlays,
            visits=1,
            depth=depth,
            addressable=addressable,
            created_step=self.next_step,
        )
