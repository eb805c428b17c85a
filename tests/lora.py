"""A real peft LoRA adapter for tests that need one without training: random non-zero B weights."""

from __future__ import annotations

from pathlib import Path


def save_random_lora(folder: Path, model_dir: Path) -> Path:
    """Save a LoRA (q_proj, v_proj) on the model in `model_dir` whose B weights are seeded noise, so it changes
    the model's output (peft initialises B to zero: an adapter that does nothing)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir)
    torch.manual_seed(0)  # lora_A's random init: the same adapter every run
    peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.05)
    peft_model.save_pretrained(folder)
    return folder
