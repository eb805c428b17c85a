"""`scalehop improve`: self-improvement rounds on sites (explore -> train -> evaluate -> gate), plain functions."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.config import BrowserConfig, ExploreConfig, load_site_config, validated
from explorer.errors import ConfigError
from flows.options import add_config_options, config_from_args
from flows.progress import Heartbeat

if TYPE_CHECKING:  # training loads numpy, peft and the evaluation: not on every `scalehop` start
    from training.evaluate import EvalReport
    from training.state import ImproveState

ROUND_STEPS = 40  # browser actions per site and round (ExploreConfig has no step budget; a round needs one)
# ExploreConfig field -> the `improve` verb's flag
ROUND_FLAGS = {
    "strategy": "strategy",
    "max_steps": "steps",
    "steps_per_hop": "steps-per-hop",
    "stall_steps": "stall-steps",
    "verify_actions": "verify-actions",
    "search_probes": "search-probes",
}


def add_commands(sub) -> None:
    """Add the `improve` verb."""
    from flows.cli import model_args

    p = sub.add_parser("improve", help="LoRA self-improvement rounds: explore, train on failures, evaluate, gate")
    p.add_argument("targets", nargs="+", help="start URLs or site configs (.toml/.yaml)")
    p.add_argument("--rounds", type=int, default=1, help="explore -> train -> evaluate -> gate rounds")
    add_config_options(p, ExploreConfig, ROUND_FLAGS, {"max_steps": ROUND_STEPS})
    p.add_argument("--runs-dir", default="runs")
    p.add_argument("--run-id", help="name of the improve run (default: timestamp-improve-random); reuse one to resume")
    p.add_argument("--train-config", help="a TrainConfig TOML, e.g. configs/train.toml")
    p.add_argument("--epochs", type=float, help="override the train config's epochs")
    p.add_argument("--lr", type=float, help="override the train config's learning rate")
    p.add_argument("--heldout-share", type=float, default=0.3, help="share of pages held out for evaluation")
    p.add_argument("--seed", type=int, default=0, help="random seed of exploration, the page split and training")
    p.add_argument(
        "--dev-tasks",
        help="comma-separated task suites the rounds are gated on (bundled:<site>:dev, task files); default: the "
        "bundled dev split of each improved site that has one; 'none': gate on the held-out Predictor alone",
    )
    p.add_argument("--dev-limit", type=int, default=6, help="the first N tasks of each dev suite")
    p.add_argument("--dev-miniwob", help="MiniWoB++ task types to gate on too (comma-separated)")
    p.add_argument("--dev-max-steps", type=int, default=6, help="actions per dev task")
    model_args(p)
    p.add_argument(
        "--train-model",
        help="the base weights LoRA trains on here (default: --model); with --backend openai, a local copy of the "
        "served model, whose adapters the server hot-loads (vLLM: --enable-lora and runtime LoRA updating)",
    )
    p.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    p.add_argument("--json", action="store_true", help="last line: a JSON summary (per-round held-out accuracy)")
    p.set_defaults(handler=cmd_improve)


def cmd_improve(args: argparse.Namespace) -> int:
    """Run the rounds and print their summary."""
    from flows.cli import model_config
    from flows.improve import round_dataset
    from training.config import TrainConfig
    from training.improve import run_improvement

    serving = model_config(args).model_copy(update={"adapter": None})
    sites = [load_site_config(t) for t in args.targets]
    base = args.train_model or args.model
    train = TrainConfig.load(  # --threads holds for training too (torch's thread count is per process)
        args.train_config, base_model=base, epochs=args.epochs, lr=args.lr, seed=args.seed, threads=args.threads
    )
    explore = config_from_args(
        ExploreConfig, args, ROUND_FLAGS, seed=args.seed, max_steps=args.max_steps or ROUND_STEPS
    )
    if args.adapter and not (Path(args.adapter) / "adapter_config.json").is_file():
        raise ConfigError(f"--adapter {args.adapter}: not a peft adapter folder (no adapter_config.json)")
    from training.state import new_improve_id

    improve_id = args.run_id or new_improve_id()
    say = partial(print, file=sys.stderr, flush=True)
    with Heartbeat(Path(args.runs_dir) / improve_id, say):  # live progress on stderr: runs, training, evaluations
        state = asyncio.run(
            run_improvement(
                sites,
                args.rounds,
                Path(args.runs_dir) / improve_id,
                explore=explore,
                train=train,
                browser=BrowserConfig(executable=args.chromium),
                heldout_share=args.heldout_share,
                start_adapter=args.adapter,
                task_eval=task_eval(args),
                serving=serving,
                dataset_step=round_dataset,
            )
        )
    short = brief(state, Path(args.runs_dir) / improve_id)
    if args.json:
        print(json.dumps(short))
    else:
        for r in short["rounds"]:
            print(
                f"round {r['round']}: failures {r['failures']}, held-out {r['heldout']}, floor {r['floor']}"
                f" ({r['floor_answer']}), accuracy base "
                f"{r['accuracy_base']} -> before {r['accuracy_before']} -> after {r['accuracy_after']}; "
                f"dev-task SR {r['sr_before']} -> {r['sr_after']} on {r['dev_tasks']} tasks; "
                f"{'adopted' if r['adopted'] else 'rejected'} ({r['reason']})"
            )
        print(f"adopted adapter: {short['adopted_adapter'] or 'none (base model)'}; see {short['improve_dir']}")
    return 0


def task_eval(args: argparse.Namespace):
    """The dev tasks of the --dev-* flags (None: `--dev-tasks none`)."""
    from training.tasks import TaskEvalConfig

    if (args.dev_tasks or "").strip().lower() == "none":
        return None
    suites = tuple(t.strip() for t in (args.dev_tasks or "").split(",") if t.strip())
    miniwob = tuple(t.strip() for t in (args.dev_miniwob or "").split(",") if t.strip())
    return validated(
        lambda: TaskEvalConfig(
            suites=suites, limit=args.dev_limit, miniwob=miniwob, max_steps=args.dev_max_steps, seed=args.seed
        ),
        "--dev-* options",
    )


def brief(state: ImproveState, improve_dir: Path) -> dict:
    """The CLI's JSON summary: per round the floor and the held-out accuracy (base, before, after), dev-task SR and
    AS (before, after), counts and the decision."""

    def acc(report: EvalReport | None) -> float | None:
        return None if report is None else report.predictor_accuracy

    return {
        "improve_id": state.improve_id,
        "improve_dir": str(improve_dir),
        "rounds": [
            {
                "round": r.round,
                "failures": r.failures,
                "transitions": r.transitions,
                "train_examples": r.train_examples,
                "heldout": r.heldout,
                "floor": None if r.floor is None else r.floor.accuracy,
                "floor_answer": None if r.floor is None else r.floor.answer,
                "accuracy_base": acc(r.base),
                "accuracy_before": acc(r.before),
                "accuracy_after": acc(r.after),
                "examples": r.examples_by_view,
                "dev_tasks": None if r.tasks is None else r.tasks.n,
                "sr_before": None if r.tasks is None else r.tasks.before.sr,
                "sr_after": None if r.tasks is None else r.tasks.after.sr,
                "as_before": None if r.tasks is None else r.tasks.before.avg_steps,
                "as_after": None if r.tasks is None else r.tasks.after.avg_steps,
                "adopted": r.adopted,
                "adapter": r.adapter,
                "reason": r.reason,
            }
            for r in state.rounds
        ],
        "adopted_adapter": state.adopted_adapter,
    }
