"""LoRA training on SFT examples: transformers + peft with the HF Trainer, loss on the answer tokens only.

Each example is tokenized as the model reads it at inference: the chat template over the role's messages (its
own system prompt, so the template's default one never appears) ending in the prefilled answer start, then the
target continuation up to the template's end-of-turn token. Labels are -100 on the prompt and on padding,
built explicitly (SmolLM2's pad token is its stop token, so a pad-based collator would mask the stop).

The base model is loaded as its own float32 copy (inference may run bf16; the loaded LocalModel is never touched).
Checkpoints go to `<out>/checkpoints/` (every `save_steps`); a killed run called again with the same `out`, data and
config resumes from the last complete one (other data or settings start afresh). A finished run deletes them: the
adapter folder is the result.
On GPU set TrainConfig.bf16 and .gradient_checkpointing; for several GPUs run the same command under
`accelerate launch` or `torchrun` (the Trainer reads the process group from the environment): no code changes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.data import Dataset

from explorer.models.embedded import resolve_model_path
from explorer.roles.prompts import prefill
from training.config import TrainConfig
from training.sft import SFTExample, data_hash

IGNORE = -100


@dataclass
class TrainResult:
    """What one training run did: the adapter folder, its loss curve and throughput."""

    adapter_dir: str
    examples: int
    skipped_too_long: int
    steps: int
    losses: list[float] = field(default_factory=list)  # training loss per logged optimizer step
    tokens: int = 0  # tokens run through the model (prompt + answer, all epochs)
    seconds: float = 0.0
    resumed_from: str | None = None

    @property
    def tokens_per_s(self) -> float:
        """Training throughput."""
        return self.tokens / self.seconds if self.seconds else 0.0

    def metrics(self) -> dict:
        """The JSON form stored in adapter cards and improve.json."""
        return {
            "examples": self.examples,
            "skipped_too_long": self.skipped_too_long,
            "steps": self.steps,
            "loss_first": self.losses[0] if self.losses else None,
            "loss_last": self.losses[-1] if self.losses else None,
            "losses": [round(x, 4) for x in self.losses],
            "tokens": self.tokens,
            "seconds": round(self.seconds, 2),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "resumed_from": self.resumed_from,
        }


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


class _Encoded(Dataset):
    def __init__(self, rows: list[dict[str, list[int]]]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return self.rows[i]


def _collate(pad_id: int):
    def collate(rows: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        width = max(len(r["input_ids"]) for r in rows)
        ids = [r["input_ids"] + [pad_id] * (width - len(r["input_ids"])) for r in rows]
        labels = [r["labels"] + [IGNORE] * (width - len(r["labels"])) for r in rows]
        mask = [[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"])) for r in rows]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "attention_mask": torch.tensor(mask)}

    return collate


def load_base(cfg: TrainConfig):
    """(tokenizer, a fresh float32 copy of the base model) for training."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return tokenizer, model


def train_adapter(examples: list[SFTExample], cfg: TrainConfig, out: str | Path) -> TrainResult:
    """Train a LoRA adapter on `examples` and save it as a peft folder in `out` (resuming checkpoints there)."""
    from peft import LoraConfig, get_peft_model
    from transformers import PrinterCallback, Trainer, TrainingArguments

    out = Path(out)
    if not torch.cuda.is_available():
        torch.set_num_threads(cfg.threads or len(os.sched_getaffinity(0)))
    tokenizer, base = load_base(cfg)
    encoded = [encode(ex, tokenizer, cfg.max_length) for ex in examples]
    rows = [r for r in encoded if r is not None]
    if not rows:
        raise ValueError(f"no training example fits in max_length={cfg.max_length} (of {len(examples)} examples)")
    lora = LoraConfig(
        r=cfg.rank,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=list(cfg.target_modules),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, lora)
    if cfg.gradient_checkpointing:
        model.enable_input_require_grads()
    checkpoints = out / "checkpoints"
    identity = json.dumps({"config": cfg.model_dump(mode="json"), "data": data_hash(examples)}, sort_keys=True)
    if (checkpoints / "identity.json").is_file() and (checkpoints / "identity.json").read_text() != identity:
        shutil.rmtree(checkpoints)  # checkpoints of other data or settings: never resume from them
    checkpoints.mkdir(parents=True, exist_ok=True)
    (checkpoints / "identity.json").write_text(identity)
    args = TrainingArguments(
        output_dir=str(checkpoints),
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.lr,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps or -1,
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        lr_scheduler_type="linear",
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=2,
        seed=cfg.seed,
        data_seed=cfg.seed,
        bf16=cfg.bf16,
        activation_checkpointing=cfg.gradient_checkpointing,
        use_cpu=not torch.cuda.is_available(),
        remove_unused_columns=False,
        dataloader_num_workers=0,
        report_to="none",
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=_Encoded(rows), data_collator=_collate(_pad_id(tokenizer)))
    trainer.remove_callback(PrinterCallback)  # the loss curve is returned, not printed
    last = _last_checkpoint(checkpoints)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(last) if last else None)
    seconds = time.perf_counter() - t0
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)  # vLLM and peft loaders find the chat template next to the adapter
    shutil.rmtree(checkpoints, ignore_errors=True)  # finished: the adapter folder is the result
    epochs_run = trainer.state.epoch - (_epoch_of(last) if last else 0.0)
    return TrainResult(
        adapter_dir=str(out),
        examples=len(rows),
        skipped_too_long=len(examples) - len(rows),
        steps=trainer.state.global_step,
        losses=[h["loss"] for h in trainer.state.log_history if "loss" in h],
        tokens=round(sum(len(r["input_ids"]) for r in rows) * epochs_run),
        seconds=seconds,
        resumed_from=str(last) if last else None,
    )


def _pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint (the Trainer writes trainer_state.json last), or None."""
    done = [p.parent for p in folder.glob("checkpoint-*/trainer_state.json")] if folder.is_dir() else []
    return max(done, key=lambda p: int(p.name.rsplit("-", 1)[-1]), default=None)


def _epoch_of(checkpoint: Path) -> float:
    state = checkpoint / "trainer_state.json"
    return json.loads(state.read_text()).get("epoch", 0.0) if state.is_file() else 0.0
