"""Return to a node: by URL when the URL alone reproduces the state, else by replaying the stored
action path from the nearest URL-addressable ancestor. Arrival is verified by state identity (SSIM);
on a mismatch the next route is tried, and when none is left the node is marked unreachable."""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.browser import BrowserSession
from explorer.records import Action, Edge, Observation
from explorer.tracker import StateTracker, Step


@dataclass
class ReturnResult:
    """How a return went: the route that worked (or why none did) and the steps it took."""

    node_id: str
    ok: bool
    route: str = ""  # "here", "goto", or "replay from <ancestor> (<n> actions)"
    reason: str | None = None
    steps: list[Step] = field(default_factory=list)
    observation: Observation | None = None


async def return_to(
    session: BrowserSession, tracker: StateTracker, node_id: str, current: Observation | None = None
) -> ReturnResult:
    """Bring the browser to `node_id` and verify it; every action taken is a committed step."""
    graph = tracker.graph
    result = ReturnResult(node_id, ok=False)
    if current is not None and tracker.identify(current).node_id == node_id:
        result.ok, result.route, result.observation = True, "here", current
        return result
    node = graph.node(node_id)
    routes: list[tuple[str, list[Edge]]] = []
    if node.addressable is not False:
        routes.append((node_id, []))
    routes += graph.replay_routes(node_id)
    failures = []
    for start, path in routes:
        label = "goto" if start == node_id else f"replay from {start} ({len(path)} actions)"
        arrived, why = await _follow(session, tracker, start, path, result)
        if arrived:
            if start == node_id and node.addressable is None:
                _set(tracker, node_id, addressable=True)
            result.ok, result.route = True, label
            return result
        failures.append(f"{label}: {why}")
        if start == node_id:
            _set(tracker, node_id, addressable=False)  # the URL alone shows another state
    result.reason = "; ".join(failures) or "no URL-addressable ancestor and no stored path"
    _set(tracker, node_id, unreachable=result.reason[:500])
    return result


async def _follow(
    session: BrowserSession, tracker: StateTracker, start: str, path: list[Edge], result: ReturnResult
) -> tuple[bool, str]:
    """Go to `start` by URL, replay `path` by element key, and check where we are after each action."""
    graph = tracker.graph
    step = await tracker.act(session, Action(kind="goto", url=graph.node(start).raw_url), None, None, kind="return")
    result.steps.append(step)
    if step.node_id != start:
        return False, f"loading {graph.node(start).raw_url} showed {step.node_id}, not {start}"
    for i, edge in enumerate(path):
        obs = step.observation
        element = next((e for e in obs.elements if e.key == edge.action.element_key), None)
        if element is None and edge.action.element_key:
            return False, f"action {i + 1} ({edge.action.describe()}): element not on the page"
        action = edge.action.model_copy(update={"mark": element.mark}) if element else edge.action
        step = await tracker.act(session, action, obs, step.node_id, kind="return")
        result.steps.append(step)
        if step.node_id != edge.dst:
            return False, f"action {i + 1} ({edge.action.describe()}) reached {step.node_id}, not {edge.dst}"
    result.observation = step.observation
    return True, ""


def _set(tracker: StateTracker, node_id: str, **fields: object) -> None:
    tracker.store.put_nodes([tracker.graph.update(node_id, **fields)])
