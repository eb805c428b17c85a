"""Crash-safe run storage: `runs/<id>/run.sqlite` (WAL) plus content-addressed PNG blobs.

Every step's node, edge, record and event writes commit in one transaction, so a run killed with
SIGKILL resumes from its last committed step without losing or duplicating anything. The graph is
rebuilt from the store on resume.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from explorer.blobs import Blobs
from explorer.config import ExploreConfig, SiteConfig
from explorer.errors import ScalehopError
from explorer.graph import ExplorationGraph
from explorer.records import Action, Edge, EventKind, Node, Observation
from explorer.rows import (
    EventRow,
    RecordKind,
    RecordRow,
    RoleUsage,
    RunMeta,
    StepKind,
    StepRow,
    record_kind,
    step_kind,
    stored_names,
)

APPLICATION_ID = 0x5343484F  # "SCHO": marks a SQLite file as a scalehop run store
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (id TEXT PRIMARY KEY, url TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS nodes_url ON nodes(url);
CREATE TABLE IF NOT EXISTS edges (key TEXT PRIMARY KEY, src TEXT NOT NULL, dst TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (
    step INTEGER PRIMARY KEY, node_from TEXT, node_to TEXT, action TEXT, outcome TEXT, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY, step INTEGER NOT NULL, kind TEXT NOT NULL, node_from TEXT, node_to TEXT,
    payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_kind ON records(kind);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, step INTEGER, kind TEXT NOT NULL, detail TEXT, url TEXT, created REAL);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT, step INTEGER, role TEXT, prompt_tokens INTEGER,
    completion_tokens INTEGER, seconds REAL);
"""


class StoreError(ScalehopError):
    """A run store that cannot be opened: corrupt, foreign, or from a newer scalehop."""


class StepWriter:
    """The writes of one step; all of them commit together or not at all."""

    def __init__(self, conn: sqlite3.Connection, step: int):
        self._conn = conn
        self.step = step

    def meta(self, key: str, value: object) -> None:
        """Set a run-level value with this step (the run's accounting, so that a kill loses none of it)."""
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def node(self, node: Node) -> None:
        """Insert or update a node record (updates keep its insertion order)."""
        self._conn.execute(
            "INSERT INTO nodes (id, url, record) VALUES (?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET url = excluded.url, record = excluded.record",
            (node.id, node.url, node.model_dump_json()),
        )

    def edge(self, edge: Edge) -> None:
        """Insert or update an edge record."""
        self._conn.execute(
            "INSERT INTO edges (key, src, dst, record) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET record = excluded.record",
            (edge.key, edge.src, edge.dst, edge.model_dump_json()),
        )

    def action(
        self, node_from: str | None, node_to: str | None, action: dict, outcome: dict, kind: StepKind | None = None
    ) -> None:
        """The browser action this step took (every action is a step), of `kind`."""
        outcome = outcome if kind is None else {"kind": kind, **outcome}
        self._conn.execute(
            "INSERT INTO steps (step, node_from, node_to, action, outcome, created) VALUES (?, ?, ?, ?, ?, ?)",
            (self.step, node_from, node_to, json.dumps(action), json.dumps(outcome), time.time()),
        )

    def record(self, kind: RecordKind, payload: dict, node_from: str | None = None, node_to: str | None = None) -> str:
        """A record (an ExploreRecord's JSON); its id is `<step>-<n>`, unique by construction."""
        n = self._conn.execute("SELECT COUNT(*) FROM records WHERE step = ?", (self.step,)).fetchone()[0]
        rid = f"{self.step}-{n}"
        self._conn.execute(
            "INSERT INTO records (id, step, kind, node_from, node_to, payload) VALUES (?, ?, ?, ?, ?, ?)",
            (rid, self.step, kind, node_from, node_to, json.dumps(payload)),
        )
        return rid

    def event(self, kind: str, detail: str = "", url: str = "") -> None:
        """A browser or engine event (blocked request, crash, timeout, ...)."""
        self._conn.execute(
            "INSERT INTO events (step, kind, detail, url, created) VALUES (?, ?, ?, ?, ?)",
            (self.step, kind, detail, url, time.time()),
        )

    def usage(self, role: str, prompt_tokens: int, completion_tokens: int, seconds: float) -> None:
        """Model usage of one call."""
        self._conn.execute(
            "INSERT INTO usage (step, role, prompt_tokens, completion_tokens, seconds) VALUES (?, ?, ?, ?, ?)",
            (self.step, role, prompt_tokens, completion_tokens, seconds),
        )


class RunStore:
    """One run's folder: run.sqlite (WAL) and blobs/ of content-addressed PNGs."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.path = self.dir / "run.sqlite"
        self.blobs = self.dir / "blobs"
        self._blobs = Blobs(self.blobs)
        self._conn = self._open()

    @classmethod
    def create(cls, runs_dir: str | Path, run_id: str, meta: dict | None = None) -> RunStore:
        """A new run folder `runs_dir/run_id`; refuses to reuse an existing run."""
        run_dir = Path(runs_dir) / run_id
        if (run_dir / "run.sqlite").exists():
            raise StoreError(f"{run_dir} already holds a run: resume it, or choose another run id")
        run_dir.mkdir(parents=True, exist_ok=True)
        store = cls(run_dir)
        with store._conn:
            for key, value in {"run_id": run_id, "created": time.time(), **(meta or {})}.items():
                store._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))
        return store

    def _open(self) -> sqlite3.Connection:
        if self.path.exists():
            with open(self.path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise StoreError(f"{self.path} is not a SQLite database: it is corrupt or not a scalehop run")
        self.blobs.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30, check_same_thread=False)
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
            if tables and app_id != APPLICATION_ID:
                conn.close()
                raise StoreError(f"{self.path} is a SQLite file of another program, not a scalehop run store")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                conn.close()
                raise StoreError(f"{self.path} was written by a newer scalehop (schema {version}): upgrade scalehop")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} cannot be opened as a run store ({exc}): it is corrupt") from None
        return conn

    def close(self) -> None:
        """Close the database (committed steps are already durable)."""
        self._conn.close()

    # ---- writing ---------------------------------------------------------------------------------------------
    def put_blob(self, data: bytes, suffix: str = ".png") -> str:
        """Store bytes under their sha256 (atomic; idempotent); returns the hash."""
        return self._blobs.put(data, suffix)

    def blob_path(self, digest: str, suffix: str = ".png") -> Path:
        """Where the blob with this hash lives."""
        return self._blobs.path(digest, suffix)

    def blob(self, digest: str, suffix: str = ".png") -> bytes:
        """The bytes of a stored blob."""
        return self._blobs.get(digest, suffix)

    def put_observation(self, obs: Observation) -> str:
        """Store an observation (its screenshots as PNG blobs, the rest as a JSON blob); returns the JSON's hash."""
        fields = obs.model_dump(mode="json", exclude={"screenshot", "som_screenshot"})
        fields |= {"screenshot": self.put_blob(obs.screenshot), "som_screenshot": self.put_blob(obs.som_screenshot)}
        return self.put_blob(json.dumps(fields, sort_keys=True).encode(), ".json")

    def observation(self, digest: str, screenshots: bool = True) -> Observation:
        """The Observation stored by `put_observation`; with `screenshots=False` its two PNGs are left unread
        (empty bytes), for readers that need only the elements and text."""
        fields = json.loads(self.blob(digest, ".json"))
        for key in ("screenshot", "som_screenshot"):
            fields[key] = self.blob(fields[key]) if screenshots else b""
        return Observation.model_validate(fields)

    @contextmanager
    def step(self, step: int) -> Iterator[StepWriter]:
        """One transaction for all writes of `step`: committed on exit, rolled back on error."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield StepWriter(self._conn, step)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def put_nodes(self, nodes: list[Node]) -> None:
        """Write node records outside a step (status or reachability changes), in one transaction."""
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            writer = StepWriter(self._conn, self.last_step())
            for node in nodes:
                writer.node(node)

    def set_meta(self, key: str, value: object) -> None:
        """Store a run-level setting or summary value."""
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    # ---- reading ---------------------------------------------------------------------------------------------
    def meta(self) -> RunMeta:
        """The run-level settings and totals."""
        raw = {k: json.loads(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}
        try:
            return RunMeta.model_validate({"run_id": self.dir.name, **raw})
        except ValidationError as e:
            first = e.errors()[0]
            raise StoreError(f"{self.path}: not a scalehop run's meta ({first['loc']}: {first['msg']})") from None

    def site(self) -> SiteConfig:
        """The site this run explored (as configured when it was created)."""
        site = self.meta().site
        if site is None:
            raise StoreError(f"{self.path} names no site: it was not written by `scalehop explore`")
        return site

    def explore_config(self) -> ExploreConfig:
        """The exploration settings this run was created with (the defaults for runs that kept none)."""
        return self.meta().explore or ExploreConfig()

    @staticmethod
    def site_of(run_dir: str | Path) -> SiteConfig:
        """The site of the run at `run_dir` (opens and closes its store)."""
        if not (Path(run_dir) / "run.sqlite").exists():
            raise StoreError(f"{run_dir} holds no run (no run.sqlite): check the run folder")
        store = RunStore(run_dir)  # the meta only: no graph to rebuild
        try:
            return store.site()
        finally:
            store.close()

    def last_step(self) -> int:
        """The highest committed step number (-1 for a new run)."""
        return self._conn.execute("SELECT COALESCE(MAX(step), -1) FROM steps").fetchone()[0]

    def load_nodes(self) -> list[Node]:
        """All node records, in insertion order."""
        rows = self._conn.execute("SELECT record FROM nodes ORDER BY rowid")
        return [Node.model_validate_json(r[0]) for r in rows]

    def load_edges(self) -> list[Edge]:
        """All edge records."""
        return [Edge.model_validate_json(r[0]) for r in self._conn.execute("SELECT record FROM edges ORDER BY rowid")]

    def steps(self, limit: int | None = None) -> list[StepRow]:
        """The committed steps in step order (the first `limit` of them)."""
        sql = "SELECT step, node_from, node_to, action, outcome, created FROM steps ORDER BY step"
        rows = self._conn.execute(sql + (" LIMIT ?" if limit is not None else ""), () if limit is None else (limit,))
        out = []
        for step, node_from, node_to, action_json, outcome_json, created in rows:
            action, outcome = Action.model_validate_json(action_json), json.loads(outcome_json)
            kind = step_kind(outcome.pop("kind", None), action)
            out.append(StepRow(step, node_from, node_to, action, outcome, kind, created))
        return out

    def records(self, kind: RecordKind | None = None) -> list[RecordRow]:
        """The records (of one kind), in step order."""
        sql = "SELECT id, step, kind, node_from, node_to, payload FROM records"
        where, names = _of_kind(kind) if kind else ("", ())
        rows = self._conn.execute(sql + where + " ORDER BY step, id", names)
        return [
            RecordRow(rid, step, record_kind(stored), node_from, node_to, json.loads(payload))
            for rid, step, stored, node_from, node_to, payload in rows
        ]

    def count_records(self, kind: RecordKind) -> int:
        """Records of one kind (e.g. "failure": the failure samples)."""
        where, names = _of_kind(kind)
        return self._conn.execute("SELECT COUNT(*) FROM records" + where, names).fetchone()[0]

    def events(self, kind: EventKind | None = None) -> list[EventRow]:
        """The browser and engine events (of one kind), in the order they were written."""
        sql = "SELECT id, step, kind, detail, url, created FROM events"
        rows = self._conn.execute(sql + (" WHERE kind = ?" if kind else "") + " ORDER BY id", (kind,) if kind else ())
        return [EventRow(*row) for row in rows]

    def usage(self) -> dict[str, RoleUsage]:
        """Model usage totals per role."""
        rows = self._conn.execute(
            "SELECT role, COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(seconds), 0.0) FROM usage GROUP BY role ORDER BY role"
        )
        return {role: RoleUsage(*totals) for role, *totals in rows}

    def count(self, table: str) -> int:
        """Row count of one of the store's tables."""
        if table not in ("nodes", "edges", "steps", "records", "events", "usage"):
            raise ValueError(f"unknown table {table!r}")
        return self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

    def load_graph(self) -> ExplorationGraph:
        """The exploration graph as committed."""
        graph = ExplorationGraph()
        for node in self.load_nodes():
            graph.add_node(node)
        for edge in self.load_edges():
            graph.put_edge(edge)
        return graph


def _of_kind(kind: RecordKind) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause (and its parameters) of the records of `kind`, old names included."""
    names = stored_names(kind)
    return f" WHERE kind IN ({', '.join('?' * len(names))})", names


def reopen(run_dir: str | Path) -> RunStore:
    """The store of an existing run (a StoreError names a folder that holds none), without rebuilding its graph."""
    run_dir = Path(run_dir)
    if not (run_dir / "run.sqlite").exists():
        raise StoreError(f"{run_dir} holds no run (no run.sqlite): check the run id and --runs-dir")
    return RunStore(run_dir)


def resume(run_dir: str | Path) -> tuple[RunStore, ExplorationGraph]:
    """Reopen a run: its store and the graph rebuilt from it (frontier = graph.frontier())."""
    run_dir = Path(run_dir)
    store = reopen(run_dir)
    try:
        return store, store.load_graph()
    except (sqlite3.DatabaseError, ValidationError) as exc:
        store.close()
        raise StoreError(f"{run_dir / 'run.sqlite'} cannot be read as a run store ({exc}): it is corrupt") from None
