"""Model backends behind one ChatModel interface: `local` (transformers, the embedded SmolLM2 default, LoRA
adapters) and `openai` (any OpenAI-compatible server), plus the server that puts `local` behind that API, and
MiniLM sentence embeddings.

Heavy modules (torch, transformers, httpx, fastapi) load on first use of the names that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.models.base import ChatModel, FinishReason, Generation, Message, Usage
from explorer.models.config import EMBEDDED_ALIAS, ModelConfig
from explorer.models.embedded import cache_root, embedded_model_dir, gguf_path
from explorer.models.errors import EmbeddedModelMissing, ModelError, ModelRequestError
from explorer.models.load import load_model
from explorer.models.usage import UsageMeter

if TYPE_CHECKING:
    from explorer.models.embedding import Embedder
    from explorer.models.local import LocalModel
    from explorer.models.openai_backend import OpenAIModel
    from explorer.models.server import build_server, create_app, serve

_LAZY = {
    "Embedder": "explorer.models.embedding",
    "LocalModel": "explorer.models.local",
    "OpenAIModel": "explorer.models.openai_backend",
    "build_server": "explorer.models.server",
    "create_app": "explorer.models.server",
    "serve": "explorer.models.server",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EMBEDDED_ALIAS",
    "ChatModel",
    "EmbeddedModelMissing",
    "Embedder",
    "FinishReason",
    "Generation",
    "LocalModel",
    "Message",
    "ModelConfig",
    "ModelError",
    "ModelRequestError",
    "OpenAIModel",
    "Usage",
    "UsageMeter",
    "build_server",
    "cache_root",
    "embedded_model_dir",
    "gguf_path",
    "load_model",
    "serve",
    "create_app",
]
