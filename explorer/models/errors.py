"""Errors of the model backends: each says what failed and what to do about it, in one line."""

from __future__ import annotations

from explorer.errors import ScalehopError


class ModelError(ScalehopError):
    """A model could not be loaded or did not answer."""


class AdapterMissing(ModelError):
    """A path holds no peft adapter (no adapter_config.json there)."""


class EmbeddedModelMissing(ModelError):
    """The package that ships the embedded default model is not installed."""


class ModelRequestError(ModelError):
    """An OpenAI-compatible server failed after the last retry; `status` is None for a timeout or no connection."""

    def __init__(self, message: str, *, url: str, status: int | None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
