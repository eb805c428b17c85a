"""The `local` backend: a transformers model in this process, on CPU or GPU, with optional peft LoRA adapters.

Prompts are rendered with the model's own chat template (SmolLM2's adds its default system prompt when a
conversation has none). Batches are left-padded with an explicit attention mask, because SmolLM2's pad token is
also its stop token. Vision-language models (AutoModelForImageTextToText) get the images through their processor.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
    LogitsProcessor,
    StoppingCriteria,
    StoppingCriteriaList,
    StopStringCriteria,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

from explorer.models.base import Generation, Message, Usage
from explorer.models.config import ModelConfig
from explorer.models.embedded import resolve_model_path
from explorer.models.errors import ModelError
from explorer.models.grammar import Grammars
from explorer.models.peft_adapters import attach, check_folder, detach
from explorer.models.prefix_cache import PrefixCache, layout
from explorer.models.usage import UsageMeter

log = logging.getLogger(__name__)


class LocalModel:
    """A ChatModel backed by transformers. Calls are serialized (one forward pass at a time); batch for speed.
    A call's `grammar` (a regex over the completion) is enforced token by token (explorer/models/grammar.py).
    On text-only models, the KV cache of a prompt prefix shared with recent calls is reused (`prefixes`,
    explorer/models/prefix_cache.py)."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.model_id = config.model
        self.adapter_id: str | None = None  # the adapter calls use by default; None: the base model
        self._adapters: dict[str, str] = {}
        self._lock = threading.RLock()
        self._meter = UsageMeter()
        self._stops: dict[tuple[str, ...], StoppingCriteriaList] = {}
        if config.device == "cuda" and not torch.cuda.is_available():
            raise ModelError("field 'device' is 'cuda', but this torch build sees no GPU: use 'auto' or 'cpu'")
        auto = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(auto if config.device == "auto" else config.device)
        if self.device.type == "cpu":
            torch.set_num_threads(config.threads or len(os.sched_getaffinity(0)))
        path = resolve_model_path(config.model)
        try:
            model_type = AutoConfig.from_pretrained(path).model_type
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0]
            raise ModelError(f"cannot load model {config.model!r}: {first}") from None
        self.is_vlm = model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
        self.sees_images = self.is_vlm
        dtype = _dtype(config.dtype, self.device)
        if self.is_vlm:
            self.processor = AutoProcessor.from_pretrained(path)
            self.tokenizer = self.processor.tokenizer
            self.hf_model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype)
        else:
            self.processor = None
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        self.hf_model.to(self.device).eval()
        self.grammars = Grammars(self.tokenizer, self.hf_model.get_output_embeddings().weight.shape[0])
        self.enforces_grammar = config.grammar  # off: a call's grammar is ignored (answers are parsed and repaired)
        # vision-language models are left out: their prompts' image tokens stand for pixels a prefix does not see
        reuse = config.prefix_cache and not self.is_vlm
        self.prefixes = PrefixCache(self.hf_model.config) if reuse else None
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if config.adapter:
            self.load_adapter(config.adapter)

    def __repr__(self) -> str:
        return f"LocalModel(model={self.model_id!r}, adapter={self.adapter_id!r}, device={self.device.type!r})"

    # -- adapters -------------------------------------------------------------------------------------------------

    @property
    def adapters(self) -> dict[str, str]:
        """Loaded LoRA adapters: name -> the folder each was loaded from."""
        return dict(self._adapters)

    def load_adapter(self, path: str | Path, name: str | None = None, *, activate: bool = True) -> str:
        """Load a peft LoRA folder next to the base weights (no reload of the base); returns its name. A loaded
        name is replaced in place: it stays listed, and calls wait on the lock until its new weights are in (if
        they fail to load, the name is gone)."""
        folder = Path(path)
        check_folder(folder)
        name = name or re.sub(r"[^A-Za-z0-9_-]", "_", folder.resolve().name)
        with self._lock:
            self._forget_prefixes()
            replacing = name in self._adapters
            if replacing:
                self.hf_model = detach(self.hf_model, name)
            try:
                self.hf_model = attach(self.hf_model, folder, name)
            except ModelError:
                if replacing:
                    self._forget(name)
                raise
            self.hf_model.eval()
            self._adapters[name] = str(folder)
            if activate:
                self.adapter_id = name
        return name

    def unload_adapter(self, name: str) -> None:
        """Remove a loaded adapter (if it was the default, the base model becomes it). Waits for a running forward
        pass; ModelError if no adapter has that name."""
        with self._lock:
            if name not in self._adapters:
                raise ModelError(f"no adapter named {name!r} is loaded (loaded: {sorted(self._adapters) or 'none'})")
            self._forget_prefixes()
            self.hf_model = detach(self.hf_model, name)
            self._forget(name)

    def _forget_prefixes(self) -> None:
        if self.prefixes is not None:
            self.prefixes.clear()

    def _forget(self, name: str) -> None:
        del self._adapters[name]
        if self.adapter_id == name:
            self.adapter_id = None

    def set_adapter(self, name: str | None) -> None:
        """Make a loaded adapter the default of later calls; None makes the base model the default."""
        if name is not None and name not in self._adapters:
            raise ModelError(f"no adapter named {name!r} is loaded (loaded: {sorted(self._adapters) or 'none'})")
        self.adapter_id = name

    # -- generation -----------------------------------------------------------------------------------------------

    def prompt_text(self, messages: Sequence[Message], n_images: int = 0) -> str:
        """The exact text the model reads for a conversation, ending with the assistant's turn opening.

        A final assistant message is a prefill: the model continues it (its text is not repeated in the answer).
        """
        prefill = bool(messages) and messages[-1]["role"] == "assistant"
        if not self.is_vlm:
            return self.tokenizer.apply_chat_template(
                list(messages), add_generation_prompt=not prefill, continue_final_message=prefill, tokenize=False
            )
        parts = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in messages]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        parts[last_user]["content"][:0] = [{"type": "image"}] * n_images
        return self.processor.apply_chat_template(
            parts, add_generation_prompt=not prefill, continue_final_message=prefill, tokenize=False
        )

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
        """Answer one conversation (see ChatModel); `adapter` picks a loaded adapter other than the default."""
        return self.generate_batch(
            [messages],
            images=[images],
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            role=role,
            use_adapter=use_adapter,
            adapter=adapter,
            grammar=grammar,
        )[0]

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
        """Answer conversations in batches of up to `config.batch_size`, grouped by prompt length; in order."""
        images = list(images) if images is not None else [None] * len(conversations)
        rows = [Row(c, im, max_tokens, grammar, role) for c, im in zip(conversations, images, strict=True)]
        return self.generate_rows(rows, temperature=temperature, stop=stop, use_adapter=use_adapter, adapter=adapter)

    def generate_rows(
        self,
        rows: Sequence[Row],
        *,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        use_adapter: bool = True,
        adapter: str | None = None,
    ) -> list[Generation]:
        """Answer rows that may differ in grammar, token limit and role (several roles' or contexts' calls merged
        into one batch: `batcher.py`), in batches of up to `config.batch_size` grouped by prompt length; in order.
        Each row is accounted to its role, with its share of the batch's seconds."""
        prompts = [self.prompt_text(r.messages, len(r.images or ())) for r in rows]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # less padding per batch
        results: list[Generation | None] = [None] * len(prompts)
        size = self.config.batch_size
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            t0 = time.perf_counter()
            with self._lock, self._adapter_context(adapter, use_adapter):
                out, clock = self._run(
                    [prompts[i] for i in chunk],
                    [rows[i] for i in chunk],
                    temperature,
                    stop,
                    self._weights_key(adapter, use_adapter),
                )
            seconds = time.perf_counter() - t0
            usages = [Usage(p, c, seconds) for _, p, c, _ in out]
            parts = clock.split(t0, seconds)
            for role, members in _by_role([rows[i].role for i in chunk]).items():
                share = len(members) / len(chunk)
                self._meter.record(
                    role,
                    [usages[k] for k in members],
                    seconds * share,
                    prefill=parts["prefill"] * share,
                    decode=parts["decode"] * share,
                    cached_tokens=round(parts["cached_tokens"] * share),
                )
            for i, (text, _, _, finish), usage in zip(chunk, out, usages, strict=True):
                results[i] = Generation(text, usage, finish)
        return results  # type: ignore[return-value]

    def choose(
        self,
        messages: Sequence[Message],
        options: Sequence[str],
        images: Sequence[bytes] | None = None,
        *,
        role: str | None = None,
        use_adapter: bool = True,
    ) -> int | None:
        """The option the model finds likeliest as the continuation (the argmax of `option_scores`)."""
        scores = self.option_scores(messages, options, images=images, role=role, use_adapter=use_adapter)
        return max(range(len(options)), key=scores.__getitem__)

    def option_scores(
        self, messages: Sequence[Message], options: Sequence[str], *, images=None, role=None, use_adapter=True
    ) -> list[float]:
        """Each option's log-probability as the continuation (not part of ChatModel: chat APIs give no scores).
        When the options start with different tokens (the usual case: a grammar's keywords) that is the first
        token's, from one forward pass over the prompt, as a constrained decoder's first step would see it;
        otherwise every option's tokens are scored (summed) in one batch."""
        ask = Options(messages, options, images, role)
        return self.option_scores_many([ask], use_adapter=use_adapter)[0]

    def option_scores_many(self, asks: Sequence[Options], *, use_adapter: bool = True) -> list[list[float]]:
        """The option scores of several prompts (see `option_scores`; several contexts' Predictors, merged by
        `batcher.py`). Prompts whose options start with different tokens share one forward pass, each row on its
        own cached prefix, and each prompt is kept in the prefix cache, as a lone call's is; the others are
        scored one at a time."""
        prompts = [self.prompt_text(a.messages, len(a.images or ())) for a in asks]
        plans = [self._option_rows(p, a) for p, a in zip(prompts, asks, strict=True)]
        scores: list[list[float] | None] = [None] * len(asks)
        for i, (n_prompt, rows, first) in enumerate(plans):
            if first is None:
                scores[i] = self._score_tokens(n_prompt, rows, asks[i], use_adapter)
        distinct = [i for i, (*_, first) in enumerate(plans) if first is not None]
        if not distinct:
            return scores  # type: ignore[return-value]
        t0 = time.perf_counter()
        inputs = self._encode([prompts[i] for i in distinct], [asks[i].images for i in distinct])
        with self._lock, self._adapter_context(None, use_adapter), torch.inference_mode():
            clock = Clock()
            key = self._weights_key(None, use_adapter)
            inputs, logits, _ = self._forward(inputs, 1, None, key, clock, remember=len(distinct) > 1)
        logprobs = torch.log_softmax(logits[:, -1], dim=-1)
        seconds = time.perf_counter() - t0
        parts, tokens = clock.split(t0, seconds), inputs["attention_mask"].sum(1).tolist()
        share = 1 / len(distinct)
        for row, i in enumerate(distinct):
            scores[i] = logprobs[row, plans[i][2]].tolist()
            usage = Usage(int(tokens[row]), 0, seconds)
            self._meter.record(asks[i].role, [usage], seconds * share, **{k: v * share for k, v in parts.items()})
        return scores  # type: ignore[return-value]

    def _option_rows(self, prompt: str, ask: Options) -> tuple[int, object, list[int] | None]:
        """(the prompt's length in tokens, the encoded prompt + option rows, the first token of each option where
        they all differ and none is empty, else None)."""
        n_prompt = len(self._encode([prompt], [ask.images])["input_ids"][0])
        rows = self._encode([prompt + o for o in ask.options], [ask.images] * len(ask.options))
        lengths = rows["attention_mask"].sum(1).tolist()
        ids = rows["input_ids"].tolist()
        first = [row[-(n - n_prompt)] for row, n in zip(ids, lengths, strict=True) if n > n_prompt]
        distinct = len(first) == len(ask.options) and len(set(first)) == len(first)
        return n_prompt, rows, first if distinct else None

    def _score_tokens(self, n_prompt: int, rows, ask: Options, use_adapter: bool) -> list[float]:
        """Every option's tokens scored (summed log-probabilities), the options' `rows` in one batch."""
        t0 = time.perf_counter()
        # only the logits that score option tokens: many long options would otherwise hold rows x length x vocab
        keep = max(rows["attention_mask"].sum(1).tolist()) - n_prompt + 1
        with self._lock, self._adapter_context(None, use_adapter), torch.inference_mode():
            clock = Clock()
            inputs, logits, _ = self._forward(rows, keep, n_prompt - 1, self._weights_key(None, use_adapter), clock)
        ids, lengths = inputs["input_ids"], inputs["attention_mask"].sum(dim=1).tolist()
        scored = ids[:, ids.shape[1] - keep + 1 :, None]  # the tokens the kept logits predict
        logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(2, scored)[..., 0]
        # each row's option tokens are its last (length - n_prompt) tokens (left padding, or padding after a shared
        # prefix)
        scores = [logprobs[row, -(n - n_prompt) :].sum().item() for row, n in enumerate(lengths)]
        seconds = time.perf_counter() - t0
        tokens = int(inputs["attention_mask"].sum())
        self._meter.record(ask.role, [Usage(tokens, 0, seconds)], seconds, **clock.split(t0, seconds))
        return scores

    def _forward(self, inputs, keep: int, limit: int | None, key: object, clock: Clock, remember: bool = False):
        """(the inputs as laid out, the last `keep` positions' logits, the cache of every position's keys and
        values) of one forward pass over a batch; a prefix
        the rows share with a recent call (at most `limit` tokens) is read from the prefix cache. `remember`: keep
        every row's keys and values there too (a lone row's prompt is kept by the lookup itself)."""
        if self.prefixes is None or "pixel_values" in inputs:
            inputs = inputs.to(self.device)
            # left padding: each row's positions count its own tokens (a plain forward would count the padding)
            at = (
                {} if "pixel_values" in inputs else {"position_ids": (inputs["attention_mask"].cumsum(-1) - 1).clamp(0)}
            )
            out = self.hf_model(**inputs, **at, use_cache=True, logits_to_keep=keep)
            clock.prefilled()
            return inputs, out.logits.float(), out.cache
        common, cache, ids, mask = self._with_prefix(inputs, key, clock, limit)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.hf_model(
            input_ids=ids[:, common:],
            attention_mask=mask,
            position_ids=positions[:, common:],
            cache=cache,
            use_cache=True,
            logits_to_keep=keep,
        ).logits.float()
        clock.prefilled()
        if remember:
            self.prefixes.put_rows(key, ids, mask, cache)
        return {"input_ids": ids, "attention_mask": mask}, out, cache

    def usage_report(self) -> dict[str, dict[str, float]]:
        """Per role and in total: calls, requests, tokens in and out, seconds, mean latency."""
        return self._meter.report()

    # -- internals ------------------------------------------------------------------------------------------------

    def _adapter_context(self, adapter: str | None, use_adapter: bool):
        name = adapter or self.adapter_id
        if name is not None and name not in self._adapters:
            raise ModelError(f"no adapter named {name!r} is loaded (loaded: {sorted(self._adapters) or 'none'})")
        if not self._adapters:
            return nullcontext()
        if use_adapter and name is not None:
            self.hf_model.set_adapter(name)
            return nullcontext()
        return self.hf_model.disable_adapter()

    def _run(
        self, prompts: list[str], rows: list[Row], temperature: float, stop: Sequence[str] | None, key: object
    ) -> tuple[list[tuple[str, int, int, str]], Clock]:
        """(text, prompt tokens, completion tokens, finish reason) per row, for one batch, and its clock."""
        clock = Clock()
        inputs = self._encode(prompts, [r.images for r in rows])
        sampling = {"temperature": temperature, "top_p": 1.0, "top_k": 0} if temperature > 0 else {}
        drafting = len(prompts) == 1 and temperature == 0 and self.config.draft_tokens and "pixel_values" not in inputs
        if drafting:
            sampling["prompt_lookup_num_tokens"] = self.config.draft_tokens
        if self.prefixes is not None and "pixel_values" not in inputs:
            common, cache, ids, mask = self._with_prefix(inputs, key, clock)
            # assisted decoding reads its whole input on its first pass, cached or not: give it the uncached tokens
            # only (with the whole mask, which transformers reads as "the cache holds the rest")
            inputs = {"input_ids": ids[:, common:] if drafting else ids, "attention_mask": mask, "cache": cache}
        else:
            inputs = inputs.to(self.device)
        width = inputs["input_ids"].shape[1]
        limits = [r.max_tokens or self.config.max_new_tokens for r in rows]
        processors: list = [clock]
        grammars = [r.grammar for r in rows] if self.enforces_grammar else []
        if any(g is not None for g in grammars):
            processors.insert(0, self.grammars.processor(grammars, width))
        criteria = StoppingCriteriaList([*(self._stop_criteria(stop) or ()), _RowLimits(limits, width)])
        with torch.inference_mode():
            out = self.hf_model.generate(
                **inputs,
                max_new_tokens=max(limits),
                do_sample=temperature > 0,
                pad_token_id=self.tokenizer.pad_token_id,
                stopping_criteria=criteria,
                logits_processor=processors,
                **sampling,
            )
        new = out[:, width:].tolist()
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        return [
            self._finish(row[:limit], n, limit, stop) for row, n, limit in zip(new, prompt_tokens, limits, strict=True)
        ], clock

    def _with_prefix(self, inputs, key: object, clock: Clock, limit: int | None = None):
        """(n, cache, input_ids, attention_mask): the padded batch re-laid out around the n tokens its rows share,
        whose keys and values `cache` holds (from the prefix cache, or computed now and kept)."""
        lengths = inputs["attention_mask"].sum(1).tolist()
        rows = [ids[len(ids) - n :] for ids, n in zip(inputs["input_ids"].tolist(), lengths, strict=True)]
        before = self.prefixes.reused
        prefixes, cache = self.prefixes.prefill(self.hf_model, key, rows, limit)
        clock.cached += self.prefixes.reused - before
        ids, mask = layout(rows, prefixes, self.tokenizer.pad_token_id)
        return max(prefixes, default=0), cache, ids.to(self.device), mask.to(self.device)

    def _weights_key(self, adapter: str | None, use_adapter: bool) -> str | None:
        """Which weights a call runs with (its prefix cache entries are theirs): an adapter's name, or None."""
        name = adapter or self.adapter_id
        return name if self._adapters and use_adapter and name is not None else None

    def _encode(self, prompts: list[str], images: list[Sequence[bytes] | None]):
        if not self.is_vlm:
            if any(images):
                log.debug("%s is a text-only model: images ignored", self.model_id)
            return self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        from PIL import Image

        pil = [[Image.open(io.BytesIO(png)).convert("RGB") for png in row or ()] for row in images]
        return self.processor(text=prompts, images=pil if any(pil) else None, return_tensors="pt", padding=True)

    def end_ids(self) -> set[int]:
        """The tokens that end a row: the end-of-sequence tokens, and the pad token (a row that is done)."""
        return _ids(self.hf_model.generation_config.eos_token_id) | {self.tokenizer.pad_token_id}

    def _finish(self, row: list[int], prompt_tokens: int, limit: int, stop: Sequence[str] | None):
        ends = self.end_ids()
        end = next((i for i, t in enumerate(row) if t in ends), None)
        tokens = row if end is None else row[: end + 1]
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = min((text.find(s) for s in stop or () if s in text), default=-1)
        if cut >= 0:
            return text[:cut], prompt_tokens, len(tokens), "stop"
        return text, prompt_tokens, len(tokens), "length" if end is None and len(tokens) >= limit else "stop"

    def _stop_criteria(self, stop: Sequence[str] | None) -> StoppingCriteriaList | None:
        if not stop:
            return None
        key = tuple(stop)
        if key not in self._stops:  # building one scans the vocabulary (~0.1 s): keep it
            self._stops[key] = StoppingCriteriaList([StopStringCriteria(self.tokenizer, list(key))])
        return self._stops[key]


@dataclass(frozen=True)
class Row:
    """One conversation of a batch, with what may differ between the rows of one `generate` call."""

    messages: Sequence[Message]
    images: Sequence[bytes] | None
    max_tokens: int | None  # None: the config's max_new_tokens
    grammar: str | None = None  # a regex the completion must match
    role: str | None = None  # accounted to


@dataclass(frozen=True)
class Options:
    """One prompt whose options are scored (`LocalModel.option_scores_many`)."""

    messages: Sequence[Message]
    options: Sequence[str]
    images: Sequence[bytes] | None = None
    role: str | None = None  # accounted to


class _RowLimits(StoppingCriteria):
    """Ends each row at its own token limit (the batch runs to the largest); a row that ended is padded."""

    def __init__(self, limits: Sequence[int], start: int) -> None:
        self.limits = torch.tensor(limits)
        self.start = start

    def __call__(self, input_ids, scores, **kwargs) -> torch.BoolTensor:
        return (input_ids.shape[1] - self.start) >= self.limits.to(input_ids.device)


def _by_role(roles: Sequence[str | None]) -> dict[str | None, list[int]]:
    """The positions of each role among `roles`."""
    out: dict[str | None, list[int]] = {}
    for k, role in enumerate(roles):
        out.setdefault(role, []).append(k)
    return out


class Clock(LogitsProcessor):
    """Times one call's parts: called with the logits of each new token, so its first call ends the prefill (the
    prompt's forward pass) and its last ends the decode. Changes no logits. `cached`: prompt tokens reused."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None
        self.cached = 0

    def __call__(self, input_ids, scores):
        self.prefilled()
        return scores

    def prefilled(self) -> None:
        """Mark the end of a forward pass."""
        self.last = time.perf_counter()
        self.first = self.first or self.last

    def split(self, t0: float, seconds: float) -> dict[str, float]:
        """The `UsageMeter.record` keywords of a call that started at `t0` and took `seconds`: prefill and decode
        seconds (which add up to `seconds`)."""
        end = t0 + seconds
        first = min(self.first or end, end)
        return {"prefill": first - t0, "decode": end - first, "cached_tokens": self.cached}


def _ids(ids: int | list[int] | None) -> set[int]:
    return set() if ids is None else {ids} if isinstance(ids, int) else set(ids)


def _dtype(name: str, device: torch.device) -> torch.dtype:
    if name != "auto":
        return getattr(torch, name)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if _cpu_has_bf16() else torch.float32


@functools.cache
def _cpu_has_bf16() -> bool:
    """True on CPUs with native bfloat16 math (AVX512-BF16 or AMX): there it decodes ~2-3x faster than float32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
