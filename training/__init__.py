"""Self-improvement: SFT views of failure samples, LoRA training, adapters, evaluation."""
