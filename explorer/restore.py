"""What a resumed run knows again from its store, beyond the graph: the element kinds it tried (novelty) and the
nodes it had exhausted, so that a resume neither forgets novelty nor returns to a node with nothing left to try.
SCALE and the novelty-greedy walk use both; the crawl rebuilds its frontier (`crawl.Frontier.rebuilt`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from explorer.candidates import usable_elements
from explorer.config import SiteConfig
from explorer.graph import ExplorationGraph
from explorer.novelty import kind_signature
from explorer.rows import StepRow
from explorer.store import RunStore

_LABEL = re.compile(r'^(\S+)(?: "(.*)")?$', re.DOTALL)  # Action.on's label: `role "name"`, or the role alone


def tried_kinds(steps: Iterable[StepRow]) -> Counter:
    """How often each element kind (`novelty.signature`) was the Selector's pick, from the steps' action labels."""
    kinds: Counter = Counter()
    for step in steps:
        found = _LABEL.match(step.action.label or "") if step.kind == "select" else None
        if found:
            kinds[kind_signature(found.group(1), found.group(2) or "")] += 1
    return kinds


def exhausted_nodes(
    store: RunStore, graph: ExplorationGraph, site: SiteConfig, steps: Iterable[StepRow], verified: bool = True
) -> set[str]:
    """Nodes with nothing untried left among the usable elements of their stored observation; with `verified`
    (SCALE's rule), only those a verification step started from."""
    checked = {s.node_from for s in steps if s.kind == "verify"} if verified else {n.id for n in graph.nodes()}
    out = set()
    for node in graph.nodes():
        if node.id in checked and node.observation:
            usable = usable_elements(store.observation(node.observation, screenshots=False), site)
            if not {e.key for e in usable} - set(node.tried):
                out.add(node.id)
    return out
