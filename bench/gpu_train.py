"""LoRA training on a GPU host, side by side: fp32, bf16, and bf16 with gradient checkpointing (and the same fit
on the host's CPU), with the project's own `training.lora.fit_lora` (TRL's SFTTrainer) on Actor examples.

Two halves, because a GPU host may lack the browser stack and the model package:

    # here: encode the actor/qa views of a dataset with the embedded model's tokenizer, copy its config
    .venv/bin/python bench/gpu_train.py export /tmp/scalehop-bench-eval/dataset --out .gpu
    # on the GPU host (needs torch, transformers, peft, trl, datasets, pydantic, pyyaml; nothing else of ours)
    python3 bench/gpu_train.py run .gpu --steps 40 --batch-size 16

`run` trains each mode from the same seed. With `--random-init` (the default when .gpu has no weights) the base
is the embedded model's architecture with random weights: throughput and memory are those of the real model,
the loss values are not. Prints a table (tokens/s, seconds, peak GPU memory, first and last loss) and writes it
as JSON to --json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODES = {"fp32": (False, False), "bf16": (True, False), "bf16+gc": (True, True)}
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
MODEL_FILES += ("chat_template.jinja",)


def export(dataset: str, out: Path, max_length: int) -> None:
    """Write out/rows.jsonl (encoded actor and qa examples) and the model's config and tokenizer into out/model."""
    from transformers import AutoTokenizer

    from explorer.models.embedded import resolve_model_path
    from training.config import TrainConfig
    from training.train import encode
    from training.views import dataset_examples

    cfg = TrainConfig(max_length=max_length)
    source = Path(resolve_model_path(cfg.base_model))
    tokenizer = AutoTokenizer.from_pretrained(source)
    examples = dataset_examples([dataset], ("actor", "qa"))
    rows = [r for r in (encode(ex, tokenizer, max_length) for ex in examples) if r is not None]
    (out / "model").mkdir(parents=True, exist_ok=True)
    with (out / "rows.jsonl").open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    for name in MODEL_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, out / "model" / name)
    print(f"{len(rows)} rows of {len(examples)} examples, {sum(len(r['input_ids']) for r in rows)} tokens -> {out}")


def fit(folder: Path, mode: str, steps: int, batch_size: int, seed: int) -> dict:
    """Train one mode from a fresh base (same seed) and measure it."""
    import torch
    from transformers import AutoTokenizer

    from training.config import TrainConfig
    from training.lora import fit_lora

    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]
    model_dir = folder / "model"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = _base(model_dir, seed)
    bf16, gc = MODES[mode]
    cfg = TrainConfig(
        bf16=bf16,
        gradient_checkpointing=gc,
        batch_size=batch_size,
        max_steps=steps,
        save_steps=10_000,
        seed=seed,
        lr=1e-3,
    )
    gpu = torch.cuda.is_available()
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    out = folder / "adapters" / (mode if gpu else f"cpu-{mode}")
    t0 = time.perf_counter()
    result = fit_lora(rows, cfg, out, tokenizer, base, identity=mode)
    wall = time.perf_counter() - t0
    changed = _adapter_changes_output(out, _base(model_dir, seed), tokenizer) if gpu else None
    return {
        "mode": mode if gpu else f"cpu-{mode}",
        "device": torch.cuda.get_device_name() if gpu else f"cpu x{torch.get_num_threads()}",
        "steps": result.steps,
        "tokens": result.tokens,
        "seconds": round(result.seconds, 2),
        "wall_s": round(wall, 2),
        "tokens_per_s": round(result.tokens_per_s, 1),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if gpu else None,
        "loss_first": round(result.losses[0], 3) if result.losses else None,
        "loss_last": round(result.losses[-1], 3) if result.losses else None,
        "adapter_changes_output": changed,
    }


def _base(model_dir: Path, seed: int):
    """The base model in fp32: the saved weights, or (none saved) the architecture with seeded random weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    if (model_dir / "model.safetensors").is_file():
        return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir), dtype=torch.float32)


def _adapter_changes_output(adapter: Path, base, tokenizer) -> bool:
    """Does the saved adapter, loaded back onto the base in bf16, change its next-token logits?"""
    import torch
    from peft import PeftModel

    base = base.to("cuda", torch.bfloat16)
    ids = tokenizer("ACTION: click [", return_tensors="pt").input_ids.to("cuda")
    with torch.no_grad():
        plain = base(ids).logits[0, -1].float()
        tuned = PeftModel.from_pretrained(base, str(adapter)).to("cuda", torch.bfloat16)
        lora = tuned(ids).logits[0, -1].float()
    return bool((plain - lora).abs().max() > 1e-3)


def run(folder: Path, steps: int, batch_size: int, cpu_steps: int, seed: int, json_out: str | None) -> None:
    """Every GPU mode in this process, then fp32 on the CPU in a child process; print the table."""
    import torch

    rows = [fit(folder, mode, steps, batch_size, seed) for mode in MODES] if torch.cuda.is_available() else []
    if cpu_steps:
        env = os.environ | {"CUDA_VISIBLE_DEVICES": ""}
        child = [sys.executable, __file__, "fit", str(folder), "--mode", "fp32", "--steps", str(cpu_steps)]
        child += ["--batch-size", str(batch_size), "--seed", str(seed)]
        done = subprocess.run(child, env=env, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        rows += [json.loads(lines[-1])] if lines else [{"mode": "cpu-fp32", "error": done.stderr[-500:]}]
    cols = ["mode", "device", "steps", "tokens", "seconds", "tokens_per_s", "peak_gib", "loss_first", "loss_last"]
    print(" | ".join(cols + ["adapter_changes_output"]))
    for row in rows:
        print(" | ".join(str(row.get(c)) for c in [*cols, "adapter_changes_output"]))
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="verb", required=True)
    e = sub.add_parser("export")
    e.add_argument("dataset")
    e.add_argument("--out", default=".gpu")
    e.add_argument("--max-length", type=int, default=1024)
    for name in ("run", "fit"):
        r = sub.add_parser(name)
        r.add_argument("folder")
        r.add_argument("--steps", type=int, default=40)
        r.add_argument("--batch-size", type=int, default=16)
        r.add_argument("--seed", type=int, default=0)
        if name == "run":
            r.add_argument("--cpu-steps", type=int, default=2, help="steps of the CPU fp32 row (0: none)")
            r.add_argument("--json", help="write the rows here")
        else:
            r.add_argument("--mode", choices=list(MODES), default="fp32")
    args = p.parse_args()
    if args.verb == "export":
        export(args.dataset, Path(args.out), args.max_length)
    elif args.verb == "fit":
        print(json.dumps(fit(Path(args.folder), args.mode, args.steps, args.batch_size, args.seed)))
    else:
        run(Path(args.folder), args.steps, args.batch_size, args.cpu_steps, args.seed, args.json)


if __name__ == "__main__":
    main()
