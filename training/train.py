"""LoRA training on SFT examples: TRL's SFTTrainer with a peft LoraConfig, loss on the answer tokens only.

Each example is tokenized as the model reads it at inference: the chat template over the role's messages (its
own system prompt, so the template's default one never appears) ending in the prefilled answer start, then the
target continuation up to the template's end-of-turn token. Labels are -100 on the prompt and on padding,
built explicitly (SmolLM2's pad token is its stop token, so a pad-based collator would mask the stop). The rows go
to SFTTrainer pre-tokenized (`input_ids`, `labels`): it uses the labels as they are, pads with -100, and adds its
own metrics (token accuracy) to the log.

The base model is loaded as its own float32 copy (inference may run bf16; the loaded LocalModel is never touched).
The fit itself, its resumable checkpoints (same `out`, data and config) and the GPU settings: training/lora.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from explorer.models.embedded import resolve_model_path
from explorer.roles.prompts import prefill
from training.config import TrainConfig
from training.lora import TrainResult, fit_lora
from training.sft import SFTExample, data_hash

__all__ = ["IGNORE", "TrainResult", "encode", "load_base", "train_adapter"]

IGNORE = -100


def encode(example: SFTExample, tokenizer, max_length: int) -> dict[str, list[int]] | None:
    """input_ids and labels (-100 on the prompt); None when the example does not fit in `max_length`."""
    prompt = tokenizer.apply_chat_template(
        [*example.messages, prefill(example.prefill)], continue_final_message=True, tokenize=False
    )
    full = tokenizer.apply_chat_template(
        [*example.messages, {"role": "assistant", "content": example.answer}], tokenize=False
    )
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the prefilled prompt differently from the full answer")
    prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
    answer_ids = tokenizer(full[len(prompt) :].rstrip(), add_special_tokens=False).input_ids  # ends at end-of-turn
    if len(prompt_ids) + len(answer_ids) > max_length:
        return None
    return {"input_ids": prompt_ids + answer_ids, "labels": [IGNORE] * len(prompt_ids) + answer_ids}


def load_base(cfg: TrainConfig):
    """(tokenizer, a fresh float32 copy of the base model) for training."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return tokenizer, model


def train_adapter(examples: list[SFTExample], cfg: TrainConfig, out: str | Path, progress: bool = False) -> TrainResult:
    """Train a LoRA adapter on `examples` and save it as a peft folder in `out` (resuming checkpoints there);
    `progress`: show the Trainer's progress bar."""
    tokenizer, base = load_base(cfg)
    encoded = [encode(ex, tokenizer, cfg.max_length) for ex in examples]
    rows = [r for r in encoded if r is not None]
    if not rows:
        raise ValueError(f"no training example fits in max_length={cfg.max_length} (of {len(examples)} examples)")
    identity = json.dumps({"config": cfg.model_dump(mode="json"), "data": data_hash(examples)}, sort_keys=True)
    result = fit_lora(rows, cfg, out, tokenizer, base, identity, progress)
    result.skipped_too_long = len(examples) - len(rows)
    return result
