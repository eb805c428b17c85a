"""One loaded model per process and config: the roles, the loop and the server share it."""

from __future__ import annotations

import threading

from explorer.models.base import ChatModel
from explorer.models.config import ModelConfig

_lock = threading.Lock()
_models: dict[ModelConfig, ChatModel] = {}


def load_model(config: ModelConfig) -> ChatModel:
    """The model for `config`, loaded on first use and shared afterwards (the config is frozen, so hashable)."""
    with _lock:
        if config not in _models:
            if config.backend == "openai":
                from explorer.models.openai_backend import OpenAIModel

                _models[config] = OpenAIModel(config)
            else:
                from explorer.models.local import LocalModel

                _models[config] = LocalModel(config)
        return _models[config]
