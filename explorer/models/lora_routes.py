"""vLLM's runtime LoRA API on `scalehop serve-model`: `POST /v1/load_lora_adapter` and `/v1/unload_lora_adapter`.

As in vLLM (`VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`): success is 200 with a plain-text line; a name already
loaded is refused (400) unless `load_inplace` is true, which swaps in the new folder under the same name; a path
without an adapter is 404 ("No adapter found for PATH"), an adapter that fails to load 400; unloading an unknown
name is 404. Errors are vLLM's JSON `{"error": {"message", "type", "code"}}`. Unlike vLLM, serve-model always
allows this: it listens on 127.0.0.1 unless told otherwise. A load or unload waits for the running batch (the
model's lock), so requests never see half an adapter.
"""

from __future__ import annotations

import logging
import threading

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel

from explorer.models.errors import AdapterMissing
from explorer.models.local import LocalModel

log = logging.getLogger(__name__)


class LoadLoraRequest(BaseModel):
    """vLLM's LoadLoRAAdapterRequest: the served name, the folder as the server sees it, and whether to replace."""

    lora_name: str
    lora_path: str
    load_inplace: bool = False


class UnloadLoraRequest(BaseModel):
    """vLLM's UnloadLoRAAdapterRequest (`lora_int_id`, vLLM's internal id, is accepted and unused)."""

    lora_name: str
    lora_int_id: int | None = None


def lora_routes(model: LocalModel) -> APIRouter:
    """The two routes for `model`. Plain `def` routes: FastAPI runs them on its thread pool, off the event loop."""
    router = APIRouter()
    changing = threading.Lock()  # one load or unload at a time: a name's check and its change are one step

    @router.post("/v1/load_lora_adapter")
    def load(request: LoadLoraRequest) -> Response:
        """Load a peft folder as a model name (see the module doc for the answers)."""
        name, path = request.lora_name, request.lora_path
        if not name or not path:
            return error(400, "Both 'lora_name' and 'lora_path' must be provided.", "InvalidUserInput")
        with changing:
            if name == model.model_id:
                return error(400, f"'{name}' is the base model's name; choose another.", "InvalidUserInput")
            if name in model.adapters and not request.load_inplace:
                message = (
                    f"The lora adapter '{name}' has already been loaded. "
                    "If you want to load the adapter in place, set 'load_inplace' to True."
                )
                return error(400, message, "InvalidUserInput")
            try:
                model.load_adapter(path, name, activate=False)
            except AdapterMissing:
                return error(404, f"Loading lora {name} failed: No adapter found for {path}", "NotFoundError")
            except Exception as exc:  # as vLLM: whatever stops the load is the request's fault
                return error(400, f"Loading lora {name} failed: {exc}", "BadRequestError")
        log.info("loaded LoRA adapter %r from %s", name, path)
        return PlainTextResponse(f"Success: LoRA adapter '{name}' added successfully.")

    @router.post("/v1/unload_lora_adapter")
    def unload(request: UnloadLoraRequest) -> Response:
        """Remove a loaded adapter; later requests naming it get 404."""
        name = request.lora_name
        if not name:
            return error(400, "'lora_name' needs to be provided to unload a LoRA adapter.", "InvalidUserInput")
        with changing:
            if name not in model.adapters:
                return error(404, f"The lora adapter '{name}' cannot be found.", "NotFoundError")
            model.unload_adapter(name)
        log.info("unloaded LoRA adapter %r", name)
        return PlainTextResponse(f"Success: LoRA adapter '{name}' removed successfully.")

    return router


def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    """An OpenAI/vLLM-style error reply."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)
