"""peft LoRA adapters beside a transformers model's base weights: check a folder, attach an adapter, detach one.

The caller serializes these with its forward passes (LocalModel holds its lock). A failed attach leaves no trace
of the adapter, and detaching the last adapter hands back the bare base model: peft cannot run a PeftModel that
has no adapter left.
"""

from __future__ import annotations

from pathlib import Path

from explorer.models.errors import AdapterMissing, ModelError

WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")


def check_folder(folder: Path) -> None:
    """Raise AdapterMissing unless `folder` has an adapter_config.json, ModelError unless that is a peft config
    and the weights are there too; the messages name the folder."""
    from peft import PeftConfig

    if not (folder / "adapter_config.json").is_file():
        raise AdapterMissing(f"{folder}: not a peft adapter folder (no adapter_config.json)")
    try:
        kind = PeftConfig.from_pretrained(str(folder)).peft_type
    except Exception as exc:  # JSONDecodeError, TypeError...: peft's own words, one line
        raise ModelError(f"{folder}: adapter_config.json is not a peft config ({_line(exc)})") from None
    if kind is None:
        raise ModelError(f"{folder}: adapter_config.json is not a peft config (no peft_type)")
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        raise ModelError(f"{folder}: no adapter weights ({' or '.join(WEIGHT_FILES)})")


def attach(hf_model, folder: Path, name: str):
    """Load the adapter in `folder` as `name`; returns the model to use from now on (a PeftModel). On failure the
    model is left as it was, and the error names the folder."""
    from peft import PeftModel

    try:
        if isinstance(hf_model, PeftModel):
            hf_model.load_adapter(str(folder), adapter_name=name)
            return hf_model
        return PeftModel.from_pretrained(hf_model, str(folder), adapter_name=name)
    except Exception as exc:
        if isinstance(hf_model, PeftModel):
            if name in hf_model.peft_config:
                hf_model.delete_adapter(name)
        else:
            _strip(hf_model)
        raise ModelError(f"{folder}: cannot load the adapter ({_line(exc)})") from exc


def detach(hf_model, name: str):
    """Remove adapter `name` from a PeftModel; returns the model to use from now on (the base once none is left)."""
    if list(hf_model.peft_config) == [name]:
        return hf_model.unload()  # puts the base layers back in place of the LoRA layers
    hf_model.delete_adapter(name)
    return hf_model


def _strip(model) -> None:
    """Put back the base layers wherever peft injected a LoRA layer (a first adapter that failed half-way)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    for path, module in list(model.named_modules()):
        if isinstance(module, BaseTunerLayer) and "." in path:
            parent, child = path.rsplit(".", 1)
            setattr(model.get_submodule(parent), child, module.get_base_layer())


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
