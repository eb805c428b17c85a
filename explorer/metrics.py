"""Run metrics from the store: coverage curves per step and the run's summary.

States are counted raw (graph nodes, one per state identity: explorer.identity) and alias-merged: nodes of one
URL path (query ignored) with the same structure whose canonical screenshots match (SSIM >= ALIAS_DELTA) count
once, so `?next=...` and session variants of one page do not inflate coverage (DESIGN §4).
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

from explorer.dedup import StateIndex
from explorer.graph import ExplorationGraph
from explorer.identity import of_node
from explorer.store import RunStore
from explorer.summary import RunMetrics, RunSummary

ALIAS_DELTA = 0.99
FAULTS = ("timeout", "navigation_error", "navigation_loop", "crash", "dialog_flood", "observe_error", "http_error")


def alias_groups(store: RunStore, graph: ExplorationGraph) -> dict[str, str]:
    """node id -> the id of the first node it is an alias of (itself when it is no alias)."""
    index, canonical = StateIndex(ALIAS_DELTA), {}
    for node in graph.nodes():
        parts = urlsplit(node.url)
        path = f"{parts.scheme}://{parts.netloc}{parts.path}"
        identity = of_node(node.model_copy(update={"url": path}), store.blob(node.screenshot))
        match = index.identify(identity.bucket, identity.thumb, identity.overlays)
        if match.node_id is None:
            index.add(node.id, identity.bucket, identity.thumb, identity.overlays)
            canonical[node.id] = node.id
        else:
            canonical[node.id] = match.node_id
    return canonical


def step_curves(store: RunStore, graph: ExplorationGraph) -> dict[str, list[int]]:
    """Per step (index = step number): cumulative states, URLs, distinct elements tried, failures."""
    last = store.last_step()
    created = Counter(n.created_step for n in graph.nodes())
    urls_at: dict[str, int] = {}
    for n in graph.nodes():
        urls_at[n.url] = min(urls_at.get(n.url, n.created_step), n.created_step)
    url_steps = Counter(urls_at.values())
    failures = Counter(r.step for r in store.records("failure"))
    seen, tried_at = set(), Counter()
    for row in store.steps():
        key = row.action.element_key
        if key and key not in seen:
            seen.add(key)
            tried_at[row.step] += 1
    curves = {"states": [], "urls": [], "elements_tried": [], "failures": []}
    totals = dict.fromkeys(curves, 0)
    for step in range(last + 1):
        for name, counter in (
            ("states", created),
            ("urls", url_steps),
            ("elements_tried", tried_at),
            ("failures", failures),
        ):
            totals[name] += counter[step]
            curves[name].append(totals[name])
    return curves


def summarize(store: RunStore, graph: ExplorationGraph, stopped_by: str | None = None) -> RunSummary:
    """The run's numbers: steps, raw and alias-merged states, URLs, coverage, failures, events, statuses."""
    nodes = graph.nodes()
    per_url = Counter(n.url for n in nodes)
    canonical = alias_groups(store, graph)
    events = Counter(e.kind for e in store.events())
    seen = {k for n in nodes for k in n.element_keys}
    tried = {row.action.element_key for row in store.steps() if row.action.element_key}
    meta = store.meta()
    return RunSummary(
        run_id=meta.run_id,
        run_dir=str(store.dir),
        strategy=meta.strategy,
        steps=store.last_step() + 1,
        states=len(nodes),
        urls=len(per_url),
        states_merged=len(set(canonical.values())),
        same_url_states=sum(c - 1 for c in per_url.values()),
        elements_tried=len(tried),
        element_coverage=round(len(tried & seen) / len(seen), 3) if seen else 0.0,
        failures=store.count_records("failure"),
        records=store.count("records"),
        statuses=dict(Counter(n.status for n in nodes)),
        unreachable=sum(n.unreachable is not None for n in nodes),
        blocked_requests=events["blocked_request"],
        errors={k: v for k, v in events.items() if k in FAULTS},
        tokens=meta.tokens,
        seconds=round(meta.seconds, 2),
        stopped_by=stopped_by,
    )


def write_metrics(store: RunStore, graph: ExplorationGraph, stopped_by: str | None = None) -> RunSummary:
    """Write metrics.json (RunMetrics: summary + per-step curves) into the run folder; returns the summary."""
    summary = summarize(store, graph, stopped_by)
    RunMetrics(summary=summary, curves=step_curves(store, graph)).save(store.dir)
    return summary
