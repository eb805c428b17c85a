"""The `openai` backend: any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp server, OpenAI, serve-model).

Every request is bounded: a timeout, retries with capped exponential backoff and jitter on 429, 5xx, timeouts and
lost connections (Retry-After honoured, within the cap), and a concurrency limit shared by all threads. The API key
is read from the environment variable the config names and goes only into the Authorization header: it is
redacted from every error message, and never logged.

An `adapter` that is a local peft folder is hot-loaded first, with vLLM's runtime LoRA API (`load_lora`).
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from explorer.models.base import Generation, Message, Usage
from explorer.models.chat import to_openai_messages
from explorer.models.config import ModelConfig
from explorer.models.errors import ModelRequestError
from explorer.models.peft_adapters import WEIGHT_FILES
from explorer.models.usage import UsageMeter

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 429} | set(range(500, 600))


class OpenAIModel:
    """A ChatModel that POSTs to `{base_url}/chat/completions`. Thread-safe; close() when done."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.model_id = config.model
        self.adapter_id = config.adapter
        self.sees_images = config.vision
        self.enforces_grammar = False  # a server may ignore structured outputs: answers are parsed and repaired
        self.url = f"{config.base_url}/chat/completions"
        self._meter = UsageMeter()
        self._slots = threading.BoundedSemaphore(config.concurrency)
        key = os.environ.get(config.api_key_env)
        self._secret = key or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers)
        if config.adapter and (Path(config.adapter) / "adapter_config.json").is_file():
            self.adapter_id = self.load_lora(Path(config.adapter))

    def __repr__(self) -> str:
        return f"OpenAIModel(url={self.url!r}, model={self.model_id!r}, adapter={self.adapter_id!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def load_lora(self, folder: Path) -> str:
        """Hot-load a peft folder with the server's runtime LoRA API (vLLM's POST /v1/load_lora_adapter, also
        serve-model's) and return the name to send as `model`: the folder's name and a digest of its files, so a
        retrained folder gets a new name and two runs' `round-1` never share one. Hence a name the server already
        has holds these very weights, and its "already loaded" answer is taken as success."""
        folder = folder.resolve()
        digest = hashlib.sha256()
        for part in ("adapter_config.json", *WEIGHT_FILES):
            if (folder / part).is_file():
                with (folder / part).open("rb") as fh:
                    digest.update(hashlib.file_digest(fh, "sha256").digest())
        name = f"{folder.name}-{digest.hexdigest()[:8]}"
        url = f"{self.config.base_url}/load_lora_adapter"
        try:
            self._send(url, {"lora_name": name, "lora_path": str(folder)})
        except ModelRequestError as exc:
            if exc.status == 400 and "already been loaded" in str(exc):
                return name
            hint = (
                f"to hot-load {folder}, the server at {self.config.base_url} must allow runtime LoRA loading (start "
                "vLLM with --enable-lora, --max-lora-rank at least the adapter's rank, and the environment variable "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; serve-model always allows it) and see the folder at this "
                "same path (a shared volume: docker/compose.yaml mounts the runs volume at /app/runs in both)"
            )
            raise ModelRequestError(f"{exc}; {hint}", url=url, status=exc.status) from None
        return name

    def load_adapter(self, path: str | Path, name: str | None = None, *, activate: bool = True) -> str:
        """LocalModel's `load_adapter` on a server: hot-load the peft folder (`load_lora`) and return its served
        name (`name` is not used: the served name carries the weights' digest); `activate` makes it the default."""
        served = self.load_lora(Path(path))
        if activate:
            self.adapter_id = served
        return served

    def set_adapter(self, name: str | None) -> None:
        """Make a served adapter name the default of later calls; None makes the base model the default."""
        self.adapter_id = name

    def generate(
        self,
        messages: Sequence[Message],
        images: Sequence[bytes] | None = None,
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        role: str | None = None,
        use_adapter: bool = True,
        adapter: str | None = None,
        grammar: str | None = None,
    ) -> Generation:
        """Answer one conversation (see ChatModel); the served name is `adapter`'s, else the default adapter's,
        unless use_adapter=False. A `grammar` is sent as the config's kind of structured output."""
        chosen = adapter or self.adapter_id
        body: dict[str, Any] = {
            "model": chosen if use_adapter and chosen else self.model_id,
            "messages": to_openai_messages(messages, images),
            "max_tokens": max_tokens or self.config.max_new_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = list(stop)
        if grammar is not None and self.config.structured_outputs == "structured_outputs":
            body["structured_outputs"] = {"regex": grammar}
        elif grammar is not None and self.config.structured_outputs == "guided_regex":
            body["guided_regex"] = grammar
        t0 = time.perf_counter()
        data = self._post(body)
        seconds = time.perf_counter() - t0
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            message = f"POST {self.url}: no choices[0].message in the reply"
            raise ModelRequestError(message, url=self.url, status=200) from None
        usage = data.get("usage") or {}
        result = Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), seconds)
        self._meter.record(role, [result], seconds)
        return Generation(text, result, "length" if choice.get("finish_reason") == "length" else "stop")

    def generate_batch(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        images: Sequence[Sequence[bytes] | None] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        role: str | None = None,
        use_adapter: bool = True,
        adapter: str | None = None,
        grammar: str | None = None,
    ) -> list[Generation]:
        """Answer conversations with concurrent requests (at most `config.concurrency` in flight), in order."""
        images = list(images) if images is not None else [None] * len(conversations)
        kwargs = {"max_tokens": max_tokens, "temperature": temperature, "stop": stop, "role": role}
        kwargs |= {"adapter": adapter, "grammar": grammar}
        workers = max(1, min(self.config.concurrency, len(conversations)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai") as pool:
            futures = [
                pool.submit(self.generate, c, im, use_adapter=use_adapter, **kwargs)
                for c, im in zip(conversations, images, strict=True)
            ]
            return [f.result() for f in futures]

    def choose(
        self,
        messages: Sequence[Message],
        options: Sequence[str],
        images: Sequence[bytes] | None = None,
        *,
        role: str | None = None,
        use_adapter: bool = True,
    ) -> int | None:
        """The option the served model's short answer starts with (chat APIs give no option scores); or None."""
        gen = self.generate(messages, images, max_tokens=12, role=role, use_adapter=use_adapter)
        return choice_of(gen.text, options)

    def usage_report(self) -> dict[str, dict[str, float]]:
        """Per role and in total: calls, requests, tokens in and out, seconds (summed over requests), mean latency."""
        return self._meter.report()

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self._send(self.url, body)
        try:
            return response.json()
        except ValueError:
            message = f"POST {self.url}: HTTP {response.status_code} with a body that is not JSON"
            raise ModelRequestError(message, url=self.url, status=response.status_code) from None

    def _send(self, url: str, body: dict[str, Any]) -> httpx.Response:
        """POST with the retry policy (see the module doc); the successful response, or ModelRequestError."""
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            retry_after = None
            try:
                with self._slots:
                    response = self._client.post(url, json=body)
            except httpx.TimeoutException:
                problem, status = f"timed out after {self.config.timeout_s:g} s", None
            except httpx.TransportError as exc:
                problem, status = f"connection failed ({type(exc).__name__})", None
            else:
                if response.is_success:
                    return response
                status = response.status_code
                problem = f"HTTP {status}: {' '.join(response.text[:300].split())}"
                if status not in _RETRY_STATUS:
                    break
                retry_after = _retry_after(response.headers.get("retry-after"))
            if attempt == attempts:
                break
            delay = self._delay(attempt, retry_after)
            log.warning("POST %s: %s; retry %d of %d in %.1f s", url, self._safe(problem), attempt, attempts - 1, delay)
            time.sleep(delay)
        message = f"POST {url} failed after {attempt} attempt(s): {problem}"
        raise ModelRequestError(self._safe(message), url=url, status=status)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.config.backoff_max_s)
        backoff = min(self.config.backoff_s * 2 ** (attempt - 1), self.config.backoff_max_s)
        return backoff * random.uniform(0.5, 1.0)

    def _safe(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def choice_of(text: str, options: Sequence[str]) -> int | None:
    """The index of the longest option that `text` starts with (case and leading space ignored); or None."""
    said = text.strip().lower()
    fits = [i for i, o in enumerate(options) if o.strip() and said.startswith(o.strip().lower())]
    return max(fits, key=lambda i: len(options[i].strip()), default=None)
