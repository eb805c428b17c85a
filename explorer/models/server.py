"""`scalehop serve-model`: the local backend behind an OpenAI-compatible API, so many explorer processes share one
loaded model (as they would share vLLM on a GPU box).

`POST /v1/chat/completions` takes text and base64 data-URL image parts; its `model` field names the base model or
a loaded adapter (absent: the model's default). Concurrent requests are batched on one worker thread. Adapters
can be loaded and unloaded while serving, with vLLM's runtime LoRA API (see `lora_routes`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from explorer.errors import ConfigError
from explorer.models.batcher import Batcher, Job
from explorer.models.chat import from_openai_messages
from explorer.models.config import ModelConfig
from explorer.models.errors import ModelError
from explorer.models.local import LocalModel
from explorer.models.lora_routes import error, lora_routes


class ChatRequest(BaseModel):
    """The fields of an OpenAI chat request that we honour; others (user, seed, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(None, gt=0)
    max_completion_tokens: int | None = Field(None, gt=0)
    temperature: float = Field(1.0, ge=0)
    stop: str | list[str] | None = None
    n: int = 1
    stream: bool = False
    structured_outputs: dict[str, Any] | None = None  # vLLM's: {"regex": ...} is honoured
    guided_regex: str | None = None  # vLLM's older name for the same

    def regex(self) -> str | None:
        """The regex the completion must match, if the request asks for one."""
        return (self.structured_outputs or {}).get("regex") or self.guided_regex


def create_app(model: LocalModel) -> FastAPI:
    """The FastAPI app serving `model` and its loaded adapters; the batcher stops when the app shuts down."""
    batcher = Batcher(model)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        batcher.close()

    app = FastAPI(title="scalehop model server", lifespan=lifespan)
    app.state.model = model
    app.include_router(lora_routes(model))
    created = int(time.time())

    def names() -> list[str]:
        """Every name a request's `model` field may take."""
        return [model.model_id, *model.adapters]

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness, and what is loaded."""
        return {"status": "ok", "model": model.model_id, "adapters": list(model.adapters), "device": model.device.type}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        """The served names: the base model, then each loaded adapter with its folder and `parent` (as vLLM)."""
        card = {"object": "model", "created": created, "owned_by": "scalehop"}
        base = {"id": model.model_id, **card, "root": model.model_id, "parent": None}
        loras = [{"id": n, **card, "root": path, "parent": model.model_id} for n, path in model.adapters.items()]
        return {"object": "list", "data": [base, *loras]}

    @app.post("/v1/chat/completions")
    async def chat(request: ChatRequest) -> JSONResponse:
        """One chat completion (non-streaming), batched with whatever else is waiting."""
        if request.stream or request.n != 1:
            return error(400, "only n=1 without streaming is supported")
        name = request.model or model.adapter_id or model.model_id
        if name not in names():
            return error(404, f"unknown model {name!r}; served: {', '.join(names())}")
        try:
            messages, images = from_openai_messages(request.messages)
        except (KeyError, ValueError, AttributeError) as exc:
            return error(400, f"bad messages: {exc}")
        stop = [request.stop] if isinstance(request.stop, str) else request.stop or []
        adapter = None if name == model.model_id else name
        job = Job(
            messages=messages,
            images=images,
            adapter=adapter,
            use_adapter=adapter is not None,  # the served base name: the base weights
            max_tokens=request.max_completion_tokens or request.max_tokens,
            temperature=request.temperature,
            stop=tuple(stop),
            grammar=request.regex(),
        )
        try:
            result = await asyncio.wrap_future(batcher.submit(job))
        except ModelError:
            if job.adapter is None or job.adapter in model.adapters:
                raise
            return error(404, f"unknown model {name!r} (unloaded while queued); served: {', '.join(names())}")
        usage = {
            "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens,
            "total_tokens": result.usage.prompt_tokens + result.usage.completion_tokens,
        }
        message = {"role": "assistant", "content": result.text}
        choice = {"index": 0, "message": message, "finish_reason": result.finish_reason}
        body = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
            "usage": usage,
        }
        return JSONResponse(body)

    return app


def build_server(
    config: ModelConfig, host: str = "127.0.0.1", port: int = 8000, adapters: dict[str, str | Path] | None = None
) -> uvicorn.Server:
    """Load the model (and the named adapters) and return the uvicorn server; `.run()` serves until stopped."""
    if config.backend != "local":
        raise ConfigError(f"serve-model serves the local backend; field 'backend' is {config.backend!r}")
    model = LocalModel(config)
    for name, path in (adapters or {}).items():
        model.load_adapter(path, name, activate=False)
    return uvicorn.Server(uvicorn.Config(create_app(model), host=host, port=port, log_level="info"))


def serve(
    config: ModelConfig, host: str = "127.0.0.1", port: int = 8000, adapters: dict[str, str | Path] | None = None
) -> None:
    """Serve the model at http://host:port/v1 until interrupted (the `scalehop serve-model` verb)."""
    build_server(config, host, port, adapters).run()
