"""Self-improvement: SFT views of failure samples, LoRA training, the adapter registry, held-out evaluation,
gating, and the rounds that tie them together (`scalehop improve`).

Names load on first use (`from training import X` imports X's module then), so importing the package is cheap
(`evaluate` and `gate`, which share their module's name, are imported from `training.evaluate` and
`training.gate`);
heavy modules (torch, transformers, peft) load when `training.train` is first used.
"""

from explorer.lazy import lazy_exports

_EXPORTS = {
    "AdapterCard": "training.adapters",
    "read_card": "training.adapters",
    "round_dir": "training.adapters",
    "write_card": "training.adapters",
    "TrainConfig": "training.config",
    "EvalReport": "training.evaluate",
    "ShotRetriever": "training.evaluate",
    "heldout_floor": "training.evaluate",
    "judge_answer": "training.evaluate",
    "judge_prediction": "training.evaluate",
    "predictor_answers": "training.evaluate",
    "predictor_predictions": "training.evaluate",
    "run_cases": "training.evaluate",
    "GateDecision": "training.gate",
    "Sample": "training.samples",
    "crawl_samples": "training.samples",
    "load_samples": "training.samples",
    "split_by_page": "training.samples",
    "SFTExample": "training.sft",
    "data_hash": "training.sft",
    "predictor_example": "training.sft",
    "selector_example": "training.sft",
    "sft_examples": "training.sft",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
