"""The LoRA fit itself: TRL's SFTTrainer with a peft LoraConfig on pre-tokenized rows (`input_ids`, `labels` with
-100 on the prompt), checkpoints that resume, the adapter folder as the result. It imports only torch, peft, TRL,
datasets and the TrainConfig, so a GPU host runs it without the browser stack (bench/gpu_train.py).

SFTTrainer takes the rows as they are (a pre-tokenized dataset: its collator pads input_ids with the pad token and
labels with -100) and adds its own metrics (token accuracy) to the log. Checkpoints go to `<out>/checkpoints/`
(every `save_steps`); a call with the same `out` and `identity` (config and data) resumes from the last complete
one, any other identity starts afresh. While it trains, `<out>/checkpoints/progress.json` holds the last logged
step, the total and the loss (for a watcher: flows.progress). A finished run deletes them. On GPU set
TrainConfig.bf16 and .gradient_checkpointing; for several GPUs run the same command under `accelerate launch` or
`torchrun`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from training.config import TrainConfig


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


PROGRESS_FILE = "progress.json"


def progress_file(path: Path):
    """A TrainerCallback that rewrites `path` (atomically) at each logged step: step, max_steps, loss."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                tmp = path.with_suffix(".tmp")
                tmp.write_text(
                    json.dumps({"step": state.global_step, "max_steps": state.max_steps, "loss": logs["loss"]})
                )
                tmp.replace(path)

    return Progress()


def fit_lora(
    rows: list[dict[str, list[int]]],
    cfg: TrainConfig,
    out: str | Path,
    tokenizer,
    base,
    identity: str,
    progress: bool = False,
) -> TrainResult:
    """Train a LoRA adapter of `base` on the encoded `rows` and save it (and the tokenizer) as a peft folder in
    `out`, resuming the checkpoints there when `identity` matches theirs; `progress`: show a progress bar."""
    from peft import LoraConfig
    from transformers import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from datasets import Dataset

    out = Path(out)
    if not torch.cuda.is_available():
        torch.set_num_threads(cfg.threads or len(os.sched_getaffinity(0)))
    lora = LoraConfig(
        r=cfg.rank,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=list(cfg.target_modules),
        task_type="CAUSAL_LM",
    )
    checkpoints = out / "checkpoints"
    if (checkpoints / "identity.json").is_file() and (checkpoints / "identity.json").read_text() != identity:
        shutil.rmtree(checkpoints)  # checkpoints of other data or settings: never resume from them
    checkpoints.mkdir(parents=True, exist_ok=True)
    (checkpoints / "identity.json").write_text(identity)
    # transformers renamed gradient_checkpointing to activation_checkpointing (5.2x); take whichever it has
    checkpointing = next(n for n in ("activation_checkpointing", "gradient_checkpointing") if hasattr(SFTConfig, n))
    args = SFTConfig(
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
        **{checkpointing: cfg.gradient_checkpointing},
        use_cpu=not torch.cuda.is_available(),
        max_length=None,  # rows are already cut to cfg.max_length (too long ones skipped, counted)
        dataset_num_proc=None,
        dataloader_num_workers=0,
        report_to="none",
        disable_tqdm=not progress,
    )
    trainer = SFTTrainer(
        model=base, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=lora
    )
    trainer.remove_callback(PrinterCallback)  # the loss curve is returned, not printed
    trainer.add_callback(progress_file(checkpoints / PROGRESS_FILE))
    last = _last_checkpoint(checkpoints)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(last) if last else None)
    seconds = time.perf_counter() - t0
    trainer.model.save_pretrained(out)
    tokenizer.save_pretrained(out)  # vLLM and peft loaders find the chat template next to the adapter
    shutil.rmtree(checkpoints, ignore_errors=True)  # finished: the adapter folder is the result
    epochs_run = trainer.state.epoch - (_epoch_of(last) if last else 0.0)
    return TrainResult(
        adapter_dir=str(out),
        examples=len(rows),
        skipped_too_long=0,
        steps=trainer.state.global_step,
        losses=[h["loss"] for h in trainer.state.log_history if "loss" in h],
        tokens=round(sum(len(r["input_ids"]) for r in rows) * epochs_run),
        seconds=seconds,
        resumed_from=str(last) if last else None,
    )


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint (the Trainer writes trainer_state.json last), or None."""
    done = [p.parent for p in folder.glob("checkpoint-*/trainer_state.json")] if folder.is_dir() else []
    return max(done, key=lambda p: int(p.name.rsplit("-", 1)[-1]), default=None)


def _epoch_of(checkpoint: Path) -> float:
    state = checkpoint / "trainer_state.json"
    return json.loads(state.read_text()).get("epoch", 0.0) if state.is_file() else 0.0
