"""Self-improvement: SFT views of failure samples, LoRA training, the adapter registry, held-out evaluation,
gating, and the rounds that tie them together (`scalehop improve`).

Heavy modules (torch, transformers, peft) load when `training.train` is first used.
"""

from training.adapters import AdapterCard, read_card, round_dir, write_card
from training.config import TrainConfig
from training.evaluate import (
    EvalReport,
    ShotRetriever,
    evaluate,
    heldout_floor,
    judge_answer,
    judge_prediction,
    predictor_answers,
    predictor_predictions,
    run_cases,
)
from training.gate import GateDecision, gate
from training.samples import Sample, crawl_samples, load_samples, split_by_page
from training.sft import SFTExample, data_hash, predictor_example, selector_example, sft_examples

__all__ = [
    "AdapterCard",
    "EvalReport",
    "GateDecision",
    "SFTExample",
    "Sample",
    "ShotRetriever",
    "TrainConfig",
    "crawl_samples",
    "data_hash",
    "evaluate",
    "gate",
    "heldout_floor",
    "judge_answer",
    "judge_prediction",
    "load_samples",
    "predictor_answers",
    "predictor_example",
    "predictor_predictions",
    "read_card",
    "round_dir",
    "run_cases",
    "selector_example",
    "sft_examples",
    "split_by_page",
    "write_card",
]
