"""Content-addressed files: bytes stored under their sha256 in `<folder>/<hash[:2]>/<hash><suffix>`, written
atomically and once (a run's screenshots and observations, an evaluation's trajectories)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class Blobs:
    """A folder of content-addressed blobs."""

    def __init__(self, folder: str | Path):
        self.dir = Path(folder)

    def put(self, data: bytes, suffix: str = ".png") -> str:
        """Store bytes under their sha256 (atomic; idempotent); returns the hash."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.path(digest, suffix)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return digest

    def path(self, digest: str, suffix: str = ".png") -> Path:
        """Where the blob with this hash lives."""
        return self.dir / digest[:2] / f"{digest}{suffix}"

    def get(self, digest: str, suffix: str = ".png") -> bytes:
        """The bytes of a stored blob."""
        return self.path(digest, suffix).read_bytes()
