"""The report's side files as tables: improve.json (training.state.ImproveState), adapter cards (training/) and
dataset stats.json (synthesis.stats.DatasetStats).

improve.json and stats.json are read through their typed artifacts; adapter cards get curated columns by dotted
key, anything else is shown generically. An unreadable file becomes a note, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from explorer.artifact import ArtifactError
from synthesis.stats import DatasetStats
from training.evaluate import EvalReport
from training.state import ImproveState, RoundResult

T = TypeVar("T")
MAX_ROWS = 40  # rows shown of a long list (dataset drops, runs)
MAX_ITEMS = 8  # items shown of a list inside a cell


def _eval(name: str, metric: str) -> Callable[[RoundResult], object]:
    """A round's `metric` of its EvalReport `name` (base, before, after), None when it has none."""

    def value(r: RoundResult) -> object:
        report: EvalReport | None = getattr(r, name)
        return None if report is None else getattr(report, metric)

    return value


def _tasks(side: str, metric: str) -> Callable[[RoundResult], object]:
    """A round's dev-task `metric` (sr, avg_steps) of `side` (before, after), None when no tasks ran."""
    return lambda r: None if r.tasks is None else getattr(getattr(r.tasks, side), metric)


def _train(metric: str) -> Callable[[RoundResult], object]:
    """A round's training metric (None when nothing was trained)."""
    return lambda r: None if r.train is None else r.train.get(metric)


# (header, value) of the per-round table of improve.json
ROUND_COLUMNS: list[tuple[str, Callable[[RoundResult], object]]] = [
    ("round", lambda r: r.round),
    ("explored with", lambda r: r.explored_with),
    ("failures", lambda r: r.failures),
    ("transitions", lambda r: r.transitions),
    ("train examples", lambda r: r.train_examples),
    ("by view", lambda r: ", ".join(f"{v} {n}" for v, n in r.examples_by_view.items()) or None),
    ("held-out", lambda r: r.heldout),
    ("base accuracy", _eval("base", "predictor_accuracy")),
    ("before accuracy", _eval("before", "predictor_accuracy")),
    ("after accuracy", _eval("after", "predictor_accuracy")),
    ("after surprise", _eval("after", "selector_surprise")),
    ("dev tasks", lambda r: None if r.tasks is None else r.tasks.n),
    ("SR before", _tasks("before", "sr")),
    ("SR after", _tasks("after", "sr")),
    ("AS before", _tasks("before", "avg_steps")),
    ("AS after", _tasks("after", "avg_steps")),
    ("won / lost", lambda r: None if r.tasks is None else f"{r.tasks.wins} / {r.tasks.losses}"),
    ("loss first", _train("loss_first")),
    ("loss last", _train("loss_last")),
    ("train tokens/s", _train("tokens_per_s")),
    ("adopted", lambda r: r.adopted),
    ("reason", lambda r: r.reason),
    ("adapter", lambda r: r.adapter),
    ("seconds", lambda r: r.seconds),
]
# (header, dotted key) of the adapter cards table
CARD_COLUMNS = [
    ("adapter", "adapter"),
    ("round", "round"),
    ("parent round", "parent_round"),
    ("base model", "base_model"),
    ("data hash", "data_hash"),
    ("train examples", "counts.train_examples"),
    ("failures", "counts.failures"),
    ("held-out", "counts.heldout"),
    ("before accuracy", "metrics.before.predictor_accuracy"),
    ("after accuracy", "metrics.after.predictor_accuracy"),
    ("actor examples", "counts.actor_examples"),
    ("SR before", "metrics.tasks.before.sr"),
    ("SR after", "metrics.tasks.after.sr"),
    ("loss first", "metrics.train.loss_first"),
    ("loss last", "metrics.train.loss_last"),
    ("adopted", "adopted"),
    ("reason", "reason"),
]
ACCURACY_SERIES = ("base", "before", "after")  # EvalReports of a round in improve.json


class TableView(BaseModel):
    """A titled table of strings."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


class SideTables(BaseModel):
    """Everything the report shows from side files."""

    rounds: list[TableView] = []
    accuracy: dict | None = None  # {"title", "rounds": [k...], "series": [{"name", "values": [accuracy|None]}]}
    datasets: list[TableView] = []
    notes: list[str] = []


def fmt(value: object) -> str:
    """A JSON value as a table cell."""
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        more = f" … ({len(value)})" if len(value) > MAX_ITEMS else ""
        return ", ".join(fmt(v) for v in value[:MAX_ITEMS]) + more
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt(v)}" for k, v in value.items())
    return str(value)


def flat(data: dict, prefix: str = "") -> dict[str, object]:
    """Nested dicts as dotted keys (lists stay values)."""
    out: dict[str, object] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out |= flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def record_table(title: str, records: list[dict], columns: list[tuple[str, str]] | None = None) -> TableView:
    """One row per record: the given (header, dotted key) columns that occur, else every key."""
    rows = [flat(r) for r in records]
    if columns:
        columns = [(h, k) for h, k in columns if any(k in r for r in rows)]
    if not columns:
        columns = [(k, k) for k in dict.fromkeys(k for r in rows for k in r)]
    note = f"showing {MAX_ROWS} of {len(rows)}" if len(rows) > MAX_ROWS else ""
    cells = [[fmt(r.get(k)) for _, k in columns] for r in rows[:MAX_ROWS]]
    return TableView(title=title, columns=[h for h, _ in columns], rows=cells, note=note)


def json_tables(title: str, data: object) -> list[TableView]:
    """Any JSON document: its scalars (flattened) as key/value rows, each list of records as its own table."""
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return [record_table(title, data)]
    if not isinstance(data, dict):
        return [TableView(title=title, columns=["value"], rows=[[fmt(data)]])]
    lists = {k: v for k, v in data.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)}
    scalars = flat({k: v for k, v in data.items() if k not in lists})
    tables = [TableView(title=title, columns=["field", "value"], rows=[[k, fmt(v)] for k, v in scalars.items()])]
    return [t for t in tables if t.rows] + [record_table(f"{title}: {k}", v) for k, v in lists.items()]


def round_table(title: str, rounds: list[RoundResult]) -> TableView:
    """One row per round, in the ROUND_COLUMNS that have a value in some round."""
    columns = [(h, get) for h, get in ROUND_COLUMNS if any(get(r) is not None for r in rounds)]
    return TableView(
        title=title, columns=[h for h, _ in columns], rows=[[fmt(get(r)) for _, get in columns] for r in rounds]
    )


def improve_tables(title: str, state: ImproveState) -> tuple[list[TableView], dict | None]:
    """improve.json: its settings, the per-round table, and the held-out accuracy series for the chart."""
    settings = state.model_dump(mode="json", exclude={"rounds"})
    tables = json_tables(title, settings) + [round_table(f"{title}: rounds", state.rounds)]
    series = [
        {"name": name, "values": [_eval(name, "predictor_accuracy")(r) for r in state.rounds]}
        for name in ACCURACY_SERIES
    ]
    series = [s for s in series if any(v is not None for v in s["values"])]
    chart = {"title": title, "rounds": [r.round for r in state.rounds], "series": series}
    return tables, chart if series else None


def dataset_tables(title: str, stats: DatasetStats) -> list[TableView]:
    """stats.json of a built dataset: rows per site and task type, then everything else."""
    types = list(stats.counts)
    rows = [[site, *(fmt(per.get(t, 0)) for t in types)] for site, per in stats.by_site.items()]
    rows.append(["all sites", *(fmt(stats.counts[t]) for t in types)])
    per_site = TableView(title=f"{title}: rows per site and task type", columns=["site", *types], rows=rows)
    return [per_site, *json_tables(title, stats.model_dump(mode="json", exclude={"by_site", "counts"}))]


def _read(path: Path, root: Path, notes: list[str], load: Callable[[Path], T]) -> T | None:
    """`load(path)`, or None with a note when the file cannot be read."""
    try:
        return load(path)
    except (ArtifactError, OSError, ValueError) as exc:
        notes.append(f"{path.relative_to(root)} could not be read ({exc}); it is left out")
        return None


def _json(path: Path) -> object:
    return json.loads(path.read_text())


def side_tables(root: Path) -> SideTables:
    """Tables of every improve.json, adapter card (adapters/round-*/card.json) and dataset stats.json under root."""
    out = SideTables()
    for path in sorted(root.rglob(ImproveState.FILE)):
        state = _read(path, root, out.notes, ImproveState.load)
        if state is not None:
            tables, chart = improve_tables(str(path.relative_to(root)), state)
            out.rounds += tables
            out.accuracy = out.accuracy or chart
    cards = []
    for path in sorted(root.rglob("adapters/round-*/card.json")):
        data = _read(path, root, out.notes, _json)
        if isinstance(data, dict):
            cards.append({"adapter": str(path.parent.relative_to(root))} | data)
    if cards:
        out.rounds.append(record_table("adapter cards", cards, CARD_COLUMNS))
    for path in sorted(root.rglob(DatasetStats.FILE)):
        stats = _read(path, root, out.notes, DatasetStats.load)
        if stats is not None:
            out.datasets += dataset_tables(str(path.parent.relative_to(root)), stats)
    return out
