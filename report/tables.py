"""The report's side files as tables: improve.json and adapter cards (training/), dataset stats.json (synthesis/).

Known keys get curated columns (see training.improve, training.adapters, synthesis.build); anything else is
shown generically, so a newer file still renders. An unreadable file becomes a note, never an error.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

MAX_ROWS = 40  # rows shown of a long list (dataset drops, runs)
MAX_ITEMS = 8  # items shown of a list inside a cell
# (header, dotted key) of the per-round table of improve.json and of the adapter cards table
ROUND_COLUMNS = [
    ("round", "round"),
    ("explored with", "explored_with"),
    ("failures", "failures"),
    ("transitions", "transitions"),
    ("train examples", "train_examples"),
    ("held-out", "heldout"),
    ("base accuracy", "base.predictor_accuracy"),
    ("before accuracy", "before.predictor_accuracy"),
    ("after accuracy", "after.predictor_accuracy"),
    ("after surprise", "after.selector_surprise"),
    ("loss first", "train.loss_first"),
    ("loss last", "train.loss_last"),
    ("train tokens/s", "train.tokens_per_s"),
    ("adopted", "adopted"),
    ("reason", "reason"),
    ("adapter", "adapter"),
    ("seconds", "seconds"),
]
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


def improve_tables(title: str, data: object) -> tuple[list[TableView], dict | None]:
    """improve.json: its settings, the per-round table, and the held-out accuracy series for the chart."""
    if not isinstance(data, dict) or not isinstance(data.get("rounds"), list):
        return json_tables(title, data), None
    rounds = [r for r in data["rounds"] if isinstance(r, dict)]
    settings = {k: v for k, v in data.items() if k != "rounds"}
    tables = json_tables(title, settings) + [record_table(f"{title}: rounds", rounds, ROUND_COLUMNS)]
    series = [
        {
            "name": name,
            "values": [r[name].get("predictor_accuracy") if isinstance(r.get(name), dict) else None for r in rounds],
        }
        for name in ACCURACY_SERIES
    ]
    series = [s for s in series if any(v is not None for v in s["values"])]
    chart = {"title": title, "rounds": [r.get("round", i + 1) for i, r in enumerate(rounds)], "series": series}
    return tables, chart if series else None


def dataset_tables(title: str, data: dict) -> list[TableView]:
    """stats.json of a built dataset: rows per site and task type, then everything else."""
    tables = []
    by_site, counts = data.get("by_site"), data.get("counts")
    if isinstance(by_site, dict) and isinstance(counts, dict):
        types = list(counts)
        rows = [[site, *(fmt(per.get(t, 0)) for t in types)] for site, per in by_site.items() if isinstance(per, dict)]
        rows.append(["all sites", *(fmt(counts[t]) for t in types)])
        tables.append(TableView(title=f"{title}: rows per site and task type", columns=["site", *types], rows=rows))
        data = {k: v for k, v in data.items() if k not in ("by_site", "counts")}
    return tables + json_tables(title, data)


def _read(path: Path, root: Path, notes: list[str]) -> object | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        notes.append(f"{path.relative_to(root)} could not be read ({exc}); it is left out")
        return None


def side_tables(root: Path) -> SideTables:
    """Tables of every improve.json, adapter card (adapters/round-*/card.json) and dataset stats.json under root."""
    out = SideTables()
    for path in sorted(root.rglob("improve.json")):
        data = _read(path, root, out.notes)
        if data is not None:
            tables, chart = improve_tables(str(path.relative_to(root)), data)
            out.rounds += tables
            out.accuracy = out.accuracy or chart
    cards = []
    for path in sorted(root.rglob("adapters/round-*/card.json")):
        data = _read(path, root, out.notes)
        if isinstance(data, dict):
            cards.append({"adapter": str(path.parent.relative_to(root))} | data)
    if cards:
        out.rounds.append(record_table("adapter cards", cards, CARD_COLUMNS))
    for path in sorted(root.rglob("stats.json")):
        data = _read(path, root, out.notes)
        if isinstance(data, dict) and isinstance(data.get("counts"), dict):
            out.datasets += dataset_tables(str(path.parent.relative_to(root)), data)
    return out
