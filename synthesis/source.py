"""One exploration run as the builders read it: store, graph, site config, records and full observations."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from explorer.config import DEFAULT_DELTA, SiteConfig
from explorer.errors import ScalehopError
from explorer.graph import ExplorationGraph
from explorer.records import ExploreRecord, Node, Observation
from explorer.store import RunStore, resume


class RunSourceError(ScalehopError):
    """A run folder the dataset stage cannot read."""


@dataclass
class RecordRow:
    """An ExploreRecord with the id and step of its row in the store."""

    id: str
    step: int
    record: ExploreRecord


@dataclass
class RunSource:
    """A run opened for reading. Observations are loaded once each and cached."""

    store: RunStore
    graph: ExplorationGraph
    meta: dict
    _observations: dict[str, Observation] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        """The run's id (its folder name when the meta has none)."""
        return self.meta.get("run_id") or self.store.dir.name

    @cached_property
    def site(self) -> SiteConfig:
        """The site config the run explored (replay uses it)."""
        if "site" not in self.meta:
            raise RunSourceError(f"{self.store.dir}: the run's meta has no site config; it cannot be replayed")
        return SiteConfig.model_validate(self.meta["site"])

    @property
    def site_name(self) -> str:
        """The site's name as the run recorded it."""
        return self.meta.get("site", {}).get("name") or "site"

    @property
    def delta(self) -> float:
        """The SSIM threshold of state identity the run used."""
        return float(self.meta.get("explore", {}).get("delta", DEFAULT_DELTA))

    def records(self, kinds: tuple[str, ...]) -> list[RecordRow]:
        """Explore records of these kinds ("explore": j=0 failures, "understood": j=1), in step order."""
        rows = [row for kind in kinds for row in self.store.records(kind)]
        rows.sort(key=lambda r: (r["step"], r["id"]))
        return [RecordRow(r["id"], r["step"], ExploreRecord.model_validate(r["payload"])) for r in rows]

    def observation(self, digest: str) -> Observation:
        """The full stored observation with this digest."""
        if digest not in self._observations:
            self._observations[digest] = self.store.observation(digest)
        return self._observations[digest]

    def node_observation(self, node: Node) -> Observation | None:
        """The observation a node was first seen with (None for runs older than full observations)."""
        return self.observation(node.observation) if node.observation else None

    @cached_property
    def start_node(self) -> str | None:
        """The node of the run's first step (the start page)."""
        rows = self.store.rows("SELECT node_to FROM steps ORDER BY step LIMIT 1")
        return rows[0][0] if rows else None

    @cached_property
    def explorer_model(self) -> tuple[str, str]:
        """(model_id, adapter_id) of the model that explored, from its records ("" when it kept none)."""
        rows = self.store.rows(
            "SELECT json_extract(payload, '$.model_id'), json_extract(payload, '$.adapter_id'),"
            " json_extract(payload, '$.round') FROM records ORDER BY step LIMIT 1"
        )
        return (rows[0][0] or "", rows[0][1] or "") if rows else ("", "")

    @cached_property
    def round(self) -> int:
        """The self-improvement round the run belongs to (from its records; 0 by default)."""
        rows = self.store.rows("SELECT MAX(json_extract(payload, '$.round')) FROM records")
        return int(rows[0][0] or 0) if rows else 0

    def close(self) -> None:
        """Close the store."""
        self.store.close()


def open_run(run_dir: str | Path) -> RunSource:
    """Open a run folder for reading; a folder without a run is a one-line error."""
    store, graph = resume(run_dir)
    return RunSource(store, graph, store.meta())


def task_id(*parts: object) -> str:
    """A stable row id from the parts that make a task unique."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]
