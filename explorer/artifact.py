"""Typed JSON artifacts that cross module boundaries (the run summary, improve.json, a dataset's stats.json, eval
results): pydantic models with a file name, a schema version, `save` and `load`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import ClassVar, Self

from pydantic import BaseModel, ValidationError

from explorer.errors import ScalehopError


class ArtifactError(ScalehopError):
    """An artifact file that is missing, unreadable, or of another schema version."""


class Artifact(BaseModel):
    """A JSON artifact: `FILE` inside its folder, `SCHEMA` its schema version (bumped on breaking changes)."""

    FILE: ClassVar[str] = "artifact.json"
    SCHEMA: ClassVar[int] = 1
    schema_version: int = 0  # set to SCHEMA on save

    @classmethod
    def path_in(cls, where: str | Path) -> Path:
        """The artifact's file: `where` itself when it names a .json file, else `where/FILE`."""
        where = Path(where)
        return where if where.suffix == ".json" else where / cls.FILE

    def save(self, where: str | Path) -> Path:
        """Write the artifact atomically (a crash leaves the previous version in place); returns its path."""
        path = self.path_in(where)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.schema_version = self.SCHEMA
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, where: str | Path) -> Self:
        """Read the artifact; a clear ArtifactError names the file when it is missing, broken or of a newer schema."""
        path = cls.path_in(where)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ArtifactError(f"{path}: no such file") from None
        except (OSError, ValueError) as e:
            raise ArtifactError(f"{path}: not readable JSON ({e})") from None
        version = data.get("schema_version", 0) if isinstance(data, dict) else 0
        if version > cls.SCHEMA:
            raise ArtifactError(
                f"{path}: schema version {version} is newer than this scalehop's {cls.SCHEMA}: upgrade scalehop"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            raise ArtifactError(f"{path}: not a {cls.__name__} ({first['loc']}: {first['msg']})") from e
