"""The SCALE-Hop graph: a networkx DiGraph of Node/Edge records with tri-state exploration status.

Status rules (DESIGN §4): a node starts `unexplored`; the first action tried there makes it `partial`;
verification (the Predictor right on N random actions) makes it `full`, a wrong prediction during
verification keeps it `partial`. A `full` node that later yields a wrong prediction drops back to
`partial`. Unreachable nodes keep their status but leave the frontier.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import networkx as nx

from explorer.records import Action, Edge, Node, NodeStatus

FRONTIER: tuple[NodeStatus, ...] = ("unexplored", "partial")
_TRANSITIONS: dict[tuple[NodeStatus, str], NodeStatus] = {
    ("unexplored", "tried"): "partial",
    ("partial", "tried"): "partial",
    ("full", "tried"): "full",
    ("unexplored", "verified"): "full",
    ("partial", "verified"): "full",
    ("full", "verified"): "full",
    ("unexplored", "refuted"): "partial",
    ("partial", "refuted"): "partial",
    ("full", "refuted"): "partial",
}


def next_status(status: NodeStatus, event: str) -> NodeStatus:
    """The status after `event` ∈ {tried, verified, refuted}; unknown events raise ValueError."""
    try:
        return _TRANSITIONS[(status, event)]
    except KeyError:
        raise ValueError(f"no status transition from {status!r} on {event!r}") from None


class ExplorationGraph:
    """Nodes and edges of one run; the networkx DiGraph is `self.g` (records in node/edge attributes)."""

    def __init__(self) -> None:
        self.g = nx.DiGraph()

    # ---- building ---------------------------------------------------------------------------------------------
    def add_node(self, node: Node) -> Node:
        """Insert or replace a node record."""
        self.g.add_node(node.id, record=node)
        return node

    def node(self, node_id: str) -> Node:
        """The record of a node."""
        return self.g.nodes[node_id]["record"]

    def nodes(self) -> list[Node]:
        """All node records, in insertion order."""
        return [data["record"] for _, data in self.g.nodes(data=True)]

    def add_edge(self, src: str, dst: str, action: Action, verdict: bool | None = None) -> Edge:
        """Record that `action` led from src to dst; repeated actions count up on one edge."""
        data = self.g.get_edge_data(src, dst)
        edges: dict[str, Edge] = data["actions"] if data else {}
        probe = Edge(src=src, dst=dst, action=action, last_verdict=verdict)
        known = edges.get(probe.key)
        edge = probe if known is None else known.model_copy(update={"count": known.count + 1, "last_verdict": verdict})
        edges[edge.key] = edge
        self.g.add_edge(src, dst, actions=edges)
        return edge

    def put_edge(self, edge: Edge) -> None:
        """Insert an edge record as is (used when rebuilding from the store)."""
        data = self.g.get_edge_data(edge.src, edge.dst)
        edges = data["actions"] if data else {}
        edges[edge.key] = edge
        self.g.add_edge(edge.src, edge.dst, actions=edges)

    def edges(self) -> list[Edge]:
        """All edge records."""
        return [e for _, _, data in self.g.edges(data=True) for e in data["actions"].values()]

    def update(self, node_id: str, **fields: object) -> Node:
        """Replace fields of a node record (records are values: a new one is stored)."""
        node = self.node(node_id).model_copy(update=fields)
        self.g.nodes[node_id]["record"] = node
        return node

    def mark(self, node_id: str, event: str) -> Node:
        """Apply a status event (tried / verified / refuted) to a node."""
        node = self.node(node_id)
        return self.update(node_id, status=next_status(node.status, event))

    # ---- queries ----------------------------------------------------------------------------------------------
    def nodes_of_url(self, url: str) -> list[Node]:
        """Nodes whose normalized URL is `url`."""
        return [n for n in self.nodes() if n.url == url]

    def frontier(self) -> list[Node]:
        """Nodes still worth exploring: unexplored or partial, and reachable."""
        return [n for n in self.nodes() if n.status in FRONTIER and n.unreachable is None]

    def action_path(self, src: str, dst: str) -> list[Edge] | None:
        """Fewest-actions path of edges from src to dst, or None."""
        try:
            nodes = nx.shortest_path(self.g, src, dst)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return None
        return [self._best_edge(a, b) for a, b in zip(nodes, nodes[1:], strict=False)]

    def _best_edge(self, a: str, b: str) -> Edge:
        """The most often confirmed action from a to b."""
        return max(self.g.edges[a, b]["actions"].values(), key=lambda e: (e.last_verdict is not False, e.count))

    def return_cost(self, node_id: str) -> int | None:
        """Actions needed to reach a node from anywhere: 1 by URL, else 1 + replay from an addressable ancestor."""
        if self.node(node_id).addressable is not False:
            return 1
        costs = [len(path) + 1 for _, path in self.replay_routes(node_id)]
        return min(costs) if costs else None

    def replay_routes(self, node_id: str, limit: int = 5) -> list[tuple[str, list[Edge]]]:
        """Routes to a node: (URL-addressable ancestor, action path from it), nearest first."""
        routes = []
        seen = {node_id}
        queue = deque([node_id])
        while queue and len(routes) < limit:
            cur = queue.popleft()
            for pred in self.g.predecessors(cur):
                if pred in seen:
                    continue
                seen.add(pred)
                if self.node(pred).addressable is not False:
                    path = self.action_path(pred, node_id)
                    if path is not None:
                        routes.append((pred, path))
                queue.append(pred)
        return routes

    def nearest_frontier(
        self, current: str | None, exclude: set[str] | frozenset[str] = frozenset()
    ) -> tuple[Node, list[Edge] | None] | None:
        """The frontier node reachable in the fewest actions from `current`, with the in-graph path if that
        is the cheapest way (None: go there by URL or replay). None when the frontier (less `exclude`) is empty."""
        frontier = [n for n in self.frontier() if n.id not in exclude]
        if not frontier:
            return None
        hops = nx.single_source_shortest_path_length(self.g, current) if current in self.g else {}
        best = None
        for node in frontier:
            by_graph = hops.get(node.id)
            by_return = self.return_cost(node.id)
            options = [c for c in (by_graph, by_return) if c is not None]
            if not options:
                continue
            via_graph = by_graph is not None and (by_return is None or by_graph <= by_return)
            cost = (min(options), not via_graph)  # on a tie, walking on beats reloading
            if best is None or cost < best[0]:
                best = (cost, node, via_graph)
        if best is None:
            return None
        _, node, via_graph = best
        return node, (self.action_path(current, node.id) if via_graph else None)

    # ---- export -----------------------------------------------------------------------------------------------
    def to_networkx(self) -> nx.DiGraph:
        """A plain DiGraph with scalar attributes (records flattened), for export and analysis."""
        out = nx.DiGraph()
        for node in self.nodes():
            attrs = node.model_dump(mode="json", exclude={"id"})
            scalar = {
                k: json.dumps(v) if isinstance(v, list | dict) else ("" if v is None else v) for k, v in attrs.items()
            }
            out.add_node(node.id, **scalar)
        for _, _, data in self.g.edges(data=True):
            edges = list(data["actions"].values())
            first = edges[0]
            out.add_edge(
                first.src,
                first.dst,
                actions=json.dumps([e.action.model_dump(mode="json") for e in edges]),
                label=" | ".join(e.action.describe() for e in edges),
                count=sum(e.count for e in edges),
            )
        return out

    def export(self, folder: str | Path) -> tuple[Path, Path]:
        """Write graph.json (node-link) and graph.graphml into `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        flat = self.to_networkx()
        link = folder / "graph.json"
        link.write_text(json.dumps(nx.node_link_data(flat, edges="edges"), indent=1))
        graphml = folder / "graph.graphml"
        nx.write_graphml(flat, graphml)
        return link, graphml
