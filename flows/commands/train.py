"""`scalehop train DATASET_DIR...`: one LoRA adapter on the training views of datasets, in TRL's CLI style: the
config file (YAML or TOML) over TrainConfig's defaults, the flags over the file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from flows.options import add_config_options
from training.config import TrainConfig

# TrainConfig field -> the `train` verb's flag
TRAIN_FLAGS = {
    "base_model": "base-model",
    "rank": "rank",
    "alpha": "alpha",
    "lr": "lr",
    "epochs": "epochs",
    "max_steps": "max-steps",
    "batch_size": "batch-size",
    "grad_accum": "grad-accum",
    "max_length": "max-length",
    "seed": "seed",
    "bf16": "bf16",
    "gradient_checkpointing": "gradient-checkpointing",
    "threads": "threads",
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `train` verb."""
    p = sub.add_parser("train", help="train a LoRA adapter on datasets (Actor tasks, page QA, failure views)")
    p.add_argument("datasets", nargs="+", help="dataset folders written by `scalehop dataset build`")
    p.add_argument("--views", help="comma-separated: actor, qa, selector, predictor (default: the config's)")
    p.add_argument("--config", help="a TrainConfig file (.yaml or .toml); flags override it")
    p.add_argument("--out", required=True, help="the adapter folder to write (a killed run resumes there)")
    add_config_options(p, TrainConfig, TRAIN_FLAGS)
    p.add_argument("--json", action="store_true", help="last line: a JSON summary")
    p.set_defaults(handler=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    """Train and print what was trained on and how it went."""
    from training.views import train_on_datasets

    given = {name: getattr(args, name) for name in TRAIN_FLAGS if getattr(args, name, None) is not None}
    if args.views:
        given["views"] = tuple(v.strip() for v in args.views.split(",") if v.strip())
    cfg = TrainConfig.load(args.config, **given)
    result, counts = train_on_datasets(args.datasets, cfg, args.out, progress=not args.json)
    summary = {
        "adapter": str(Path(args.out)),
        "views": counts,
        "weights": dict(cfg.weights),
        "action_weights": dict(cfg.action_weights),
        "train": result.metrics() | {"losses": None},
    }
    if args.json:
        print(json.dumps(summary))
    else:
        shown = ", ".join(f"{view} {n}" for view, n in counts.items())
        m = result.metrics()
        print(f"examples: {shown} ({m['examples']} trained, {m['skipped_too_long']} too long for max_length)")
        print(
            f"loss {m['loss_first']} -> {m['loss_last']} in {m['steps']} steps, {m['seconds']} s"
            f" ({m['tokens_per_s']} tok/s)"
        )
        print(f"adapter: {args.out}  (try it: scalehop eval bundled:shop:dev --adapters base,{args.out})")
    return 0
