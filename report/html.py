"""The HTML report: one self-contained page for a run folder or a folder of runs.

The page shows the coverage curves of every run, the SCALE-Hop graph of each (hover a node for its
screenshot, click it for its edges), a gallery of failure samples, per-round metrics of a self-improvement
run and dataset stats, when those files exist. Everything is inlined: screenshots are downscaled JPEG data
URLs, the graph layout is computed here with networkx, and the page loads nothing from the network.
"""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import networkx as nx
from jinja2 import Environment, PackageLoader
from PIL import Image
from pydantic import BaseModel

from explorer.errors import ScalehopError
from explorer.graph import ExplorationGraph
from explorer.metrics import step_curves, summarize
from explorer.records import ExploreRecord
from explorer.rows import RecordRow
from explorer.store import RunStore, resume
from explorer.summary import RunSummary
from report.evals import eval_views
from report.tables import side_tables

REPORT_NAME = "report.html"
IMAGE_WIDTH = 480  # screenshots are downscaled to this width (CSS px of the page: about half the viewport)
JPEG_QUALITY = 70
GALLERY_PER_RUN = 60  # failure samples shown per run (the first ones, by step)
LAYOUT = (960.0, 560.0)  # the graph's SVG coordinate box
log = logging.getLogger(__name__)


class ReportError(ScalehopError):
    """A report path that holds no run."""


class NodeView(BaseModel):
    """A graph node as drawn: its record's fields, a layout position and its screenshot's hash."""

    id: str
    url: str
    title: str
    status: str
    visits: int
    depth: int
    created_step: int
    unreachable: str | None
    shot: str
    x: float
    y: float


class EdgeView(BaseModel):
    """All actions from one node to another, as one drawn edge."""

    src: str
    dst: str
    label: str
    count: int
    wrong: bool  # the last verdict of some action on it was j=0


class FailureView(BaseModel):
    """One failure sample (j=0): what the page was, what was done, predicted and really happened."""

    id: str
    step: int
    url: str
    node_from: str
    node_to: str
    action: str
    prediction: str
    truth: str
    verdict: str
    shot: str
    box: tuple[float, float, float, float] | None  # the acted element, in percent of the screenshot


class RunView(BaseModel):
    """One exploration run: its summary, curves, graph and failure samples."""

    key: str
    label: str
    site: str
    strategy: str
    summary: RunSummary
    curves: dict[str, list[int]]
    nodes: list[NodeView]
    edges: list[EdgeView]
    failures: list[FailureView]
    failures_total: int
    roles: dict[str, dict[str, float]] = {}  # per role: calls, constrained, repairs, fallbacks (the run's meta)
    timings: dict[str, float] = {}  # seconds by part of the run (act, observe, dedup, graph, store, model)


class _Images:
    """Screenshots as downscaled JPEG data URLs, each encoded once per report (keyed by blob hash)."""

    def __init__(self) -> None:
        self.urls: dict[str, str] = {}

    def add(self, read: Callable[[str], bytes], digest: str) -> str:
        """Encode the blob `digest` (its bytes from `read`) once; returns the key the page looks it up by (the
        digest itself)."""
        if digest not in self.urls:
            image = Image.open(io.BytesIO(read(digest))).convert("RGB")
            image.thumbnail((IMAGE_WIDTH, IMAGE_WIDTH * 4))
            buf = io.BytesIO()
            image.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=True)
            self.urls[digest] = "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
        return digest


def find_runs(root: Path, required: bool = True) -> list[Path]:
    """Every run folder (one holding run.sqlite) at or below `root`, in path order (none: a ReportError when
    `required`)."""
    if not root.is_dir():
        raise ReportError(f"{root}: no such folder: pass a run folder (with run.sqlite) or a folder of runs")
    runs = sorted(p.parent for p in root.rglob("run.sqlite"))
    if not runs and required:
        raise ReportError(f"{root} holds no run (no run.sqlite at or below it): pass a folder that `explore` wrote")
    return runs


def layout(graph: ExplorationGraph) -> dict[str, tuple[float, float]]:
    """Node positions in the LAYOUT box: a seeded spring layout of the undirected graph."""
    g = graph.g.to_undirected()
    if len(g) <= 1:
        return {n: (LAYOUT[0] / 2, LAYOUT[1] / 2) for n in g}
    pos = nx.spring_layout(g, seed=0)
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    pad = 30.0

    def scale(v: float, lo: float, hi: float, size: float) -> float:
        return pad + (v - lo) / ((hi - lo) or 1.0) * (size - 2 * pad)

    return {
        n: (scale(x, min(xs), max(xs), LAYOUT[0]), scale(y, min(ys), max(ys), LAYOUT[1])) for n, (x, y) in pos.items()
    }


def _describe_prediction(record: ExploreRecord) -> str:
    p = record.prediction
    parts = ["navigates" if p.navigates else "stays on the page"]
    parts += [f"title: {p.expected_title}"] if p.expected_title else []
    parts += [f"url: {p.expected_url}"] if p.expected_url else []
    parts += [f"change: {p.change}"] if p.change else []
    return "; ".join(parts) + (" (unparsed model output: fallback)" if p.fallback else "")


def failure_view(store: RunStore, row: RecordRow, images: _Images) -> FailureView:
    """A failure sample with its screenshot and the acted element's box."""
    record = row.record
    box = None
    if record.observation and record.action.mark is not None:
        obs = store.observation(record.observation)
        element = obs.element(record.action.mark)
        if element is not None:
            w, h = obs.viewport
            x, y, bw, bh = element.bbox
            box = (100 * x / w, 100 * y / h, 100 * bw / w, 100 * bh / h)
    v = record.verdict
    return FailureView(
        id=row.id,
        step=record.step,
        url=record.url,
        node_from=record.node_from,
        node_to=record.node_to,
        action=record.action.describe(),
        prediction=_describe_prediction(record),
        truth=record.transition.description,
        verdict=f"{'right' if v.correct else 'wrong'} (score {v.score:.2f}, {v.judge}): {v.reason}",
        shot=images.add(store.blob, record.screenshot),
        box=box,
    )


def run_view(store: RunStore, graph: ExplorationGraph, key: str, label: str, images: _Images) -> RunView:
    """Everything the page shows of one run, read from its store."""
    meta = store.meta()
    pos = layout(graph)
    nodes = [
        NodeView(
            **node.model_dump(include={"id", "url", "title", "status", "visits", "depth", "created_step"}),
            unreachable=node.unreachable,
            shot=images.add(store.blob, node.screenshot),
            x=round(pos[node.id][0], 1),
            y=round(pos[node.id][1], 1),
        )
        for node in graph.nodes()
    ]
    edges = []
    for src, dst, data in graph.g.edges(data=True):
        actions = list(data["actions"].values())
        edges.append(
            EdgeView(
                src=src,
                dst=dst,
                label=" | ".join(e.action.describe() for e in actions),
                count=sum(e.count for e in actions),
                wrong=any(e.last_verdict is False for e in actions),
            )
        )
    rows = store.records("failure")
    return RunView(
        key=key,
        label=label,
        site=meta.site.name if meta.site is not None else "?",
        strategy=meta.strategy or "?",
        summary=summarize(store, graph),
        curves=step_curves(store, graph),
        nodes=nodes,
        edges=edges,
        failures=[failure_view(store, row, images) for row in rows[:GALLERY_PER_RUN]],
        failures_total=len(rows),
        roles=meta.roles,
        timings={part: round(seconds, 1) for part, seconds in meta.timings.items()},
    )


def build_report(path: str | Path, out: str | Path | None = None) -> Path:
    """Write the HTML report of the run(s) at `path` to `out` (default `<path>/report.html`); returns its path."""
    root = Path(path).resolve()
    images, runs = _Images(), []
    skipped = []
    evals = eval_views(root, images.add, notes := [])
    for i, run_dir in enumerate(find_runs(root, required=not evals)):
        label = str(run_dir.relative_to(root)) if run_dir != root else run_dir.name
        try:
            store, graph = resume(run_dir)
        except (ScalehopError, OSError, ValueError) as e:  # an empty or foreign run.sqlite
            log.warning("report: skipping %s: not a readable run (%s)", run_dir, e)
            skipped.append(f"{label}: {e}")
            continue
        try:
            runs.append(run_view(store, graph, f"r{i}", label, images))
        finally:
            store.close()
    if not runs and not evals:
        raise ReportError(f"{root}: no readable run among {len(skipped)} run folders: {'; '.join(skipped)}")
    side = side_tables(root)
    side.notes.extend([f"skipped {note}" for note in skipped] + notes)
    env = Environment(loader=PackageLoader("report"), autoescape=True)
    page = env.get_template("report.html.j2").render(
        title=f"scalehop report: {root.name}",
        root=str(root),
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        runs=runs,
        evals=evals,
        side=side,
        data={
            "runs": [r.model_dump() for r in runs],
            "images": images.urls,
            "layout": LAYOUT,
            "accuracy": side.accuracy,
        },
        script=resources.files("report").joinpath("templates", "report.js").read_text(),
    )
    target = Path(out) if out else root / REPORT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page)
    return target
