"""One exploration run as the builders read it: store, graph, site config, records and full observations."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from explorer.config import ExploreConfig, SiteConfig
from explorer.errors import ScalehopError
from explorer.graph import ExplorationGraph
from explorer.records import Node, Observation
from explorer.rows import RECORD_KINDS, RecordKind, RecordRow, RunMeta
from explorer.store import RunStore, resume


class RunSourceError(ScalehopError):
    """A run folder the dataset stage cannot read."""


@dataclass
class RunSource:
    """A run opened for reading. Records are read once, observations loaded once each; both are cached."""

    store: RunStore
    graph: ExplorationGraph
    meta: RunMeta
    _observations: dict[str, Observation] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        """The run's id (its folder name when the meta has none)."""
        return self.meta.run_id

    @cached_property
    def site(self) -> SiteConfig:
        """The site config the run explored (replay uses it)."""
        if self.meta.site is None:
            raise RunSourceError(f"{self.store.dir}: the run's meta has no site config; it cannot be replayed")
        return self.meta.site

    @property
    def site_name(self) -> str:
        """The site's name as the run recorded it."""
        return self.meta.site.name if self.meta.site is not None else "site"

    @property
    def delta(self) -> float:
        """The SSIM threshold of state identity the run used."""
        return (self.meta.explore or ExploreConfig()).delta

    def lookup(self, node_id: str) -> tuple[Node, bytes]:
        """A node of the run and its screenshot (replay compares against both)."""
        node = self.graph.node(node_id)
        return node, self.store.blob(node.screenshot)

    @cached_property
    def _records(self) -> list[RecordRow]:
        return self.store.records()

    def records(self, kinds: tuple[RecordKind, ...] = RECORD_KINDS) -> list[RecordRow]:
        """Explore records of these kinds ("failure": j=0, "understood": j=1), in step order."""
        return [row for row in self._records if row.kind in kinds]

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
        first = self.store.steps(limit=1)
        return first[0].node_to if first else None

    @cached_property
    def explorer_model(self) -> tuple[str, str]:
        """(model_id, adapter_id) of the model that explored, from its records ("" when it kept none)."""
        if not self._records:
            return "", ""
        payload = self._records[0].payload
        return payload.get("model_id") or "", payload.get("adapter_id") or ""

    @cached_property
    def round(self) -> int:
        """The self-improvement round the run belongs to (from its records; 0 by default)."""
        return max((row.payload.get("round") or 0 for row in self._records), default=0)

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
