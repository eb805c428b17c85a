"""Self-improvement on real data: failure samples from a short SCALE run of the embedded model on the bundled shop,
their SFT views, a real LoRA adapter trained on them, its reload, and gating against a deliberately bad adapter."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from evals.results import EvalRun
from explorer.audit import know_nothing
from explorer.config import BrowserConfig, ExploreConfig
from explorer.errors import ConfigError
from explorer.models import Embedder, ModelConfig, embedded_model_dir, load_model
from explorer.records import Transition
from explorer.roles import parse_selection, predict, predictor_messages
from explorer.roles.actor import actor_question
from explorer.roles.prompts import prefill
from explorer.run import run_exploration
from flows.cli import main as cli_main
from flows.improve import round_dataset
from training import (
    AdapterCard,
    TrainConfig,
    judge_answer,
    load_samples,
    predictor_predictions,
    read_card,
    run_cases,
    sft_examples,
    split_by_page,
    write_card,
)
from training.evaluate import case_of, evaluate
from training.gate import GateDecision, decide, gate
from training.improve import run_improvement
from training.paired import paired_sr
from training.sft import SFTExample, predictor_example
from training.state import ImproveState
from training.tasks import TaskEvalConfig, evaluate_tasks
from training.train import IGNORE, encode, train_adapter

# Few examples, seen often: enough for the adapter to learn its examples' answers (a 135M model needs ~20 passes)
TINY = {"views": ("predictor",), "epochs": 5, "batch_size": 1, "lr": 3e-3, "rank": 8, "alpha": 16, "seed": 0}


def _base_q_weights(model) -> dict[str, torch.Tensor]:
    """The base (non-LoRA) weights of every q_proj of the loaded model, whether or not adapters wrap them."""
    out = {}
    for name, module in model.hf_model.named_modules():
        if name.endswith("q_proj"):
            out["layers." + name.split("layers.")[-1]] = getattr(module, "base_layer", module).weight.detach().clone()
    return out


@pytest.fixture(scope="module")
async def failures(site_config, tmp_path_factory):
    """Samples (failures and understood) of a short real SCALE run on the shop with the embedded model."""
    runs = tmp_path_factory.mktemp("runs")
    cfg = ExploreConfig(max_steps=6, steps_per_hop=4, stall_steps=2, verify_actions=1, seed=0)
    await run_exploration(site_config("shop"), cfg, BrowserConfig(), runs_dir=runs, run_id="shop")
    samples = load_samples([runs / "shop"])
    assert any(s.kind == "failure" for s in samples), "the base model should mispredict something in 6 steps"
    return samples


@pytest.fixture(scope="module")
def model():
    return load_model(ModelConfig())


@pytest.fixture(scope="module")
def trained(failures, model, tmp_path_factory):
    """A real LoRA adapter trained on the Predictor views of (up to 4) failure samples."""
    base_file = embedded_model_dir() / "model.safetensors"
    digest = hashlib.sha256(base_file.read_bytes()).hexdigest()
    snapshot = _base_q_weights(model)
    examples = sft_examples(failures, ("predictor",))[:4]
    out = tmp_path_factory.mktemp("adapters") / "round-1"
    result = train_adapter(examples, TrainConfig(**TINY), out)
    return {"result": result, "examples": examples, "dir": out, "base_digest": digest, "snapshot": snapshot}


def test_sft_views_come_from_failures_in_the_roles_own_format(failures):
    examples = sft_examples(failures)
    sources = {e.source for e in examples}
    assert sources == {s.id for s in failures if s.kind == "failure"}  # j=0 only; the Judger is never trained
    by_id = {s.id: s for s in failures}
    for ex in examples:
        sample = by_id[ex.source]
        if ex.role == "predictor":
            expected = predictor_messages(
                sample.observation, sample.action, sample.target, sample.selector_reasoning, sample.hint
            )
            assert ex.messages == expected and ex.prefill == "OUTCOME:"
            assert ex.answer.startswith("OUTCOME: " + " ".join(sample.transition.description.split()))
        else:
            assert ex.prefill == "MARK:" and "Candidates:" in ex.messages[1]["content"]
            shown = [e for e in sample.observation.elements if f"[{e.mark}] " in ex.messages[1]["content"]]
            picked, reason = parse_selection(ex.answer, shown)
            assert picked.key == sample.action.element_key and reason


def test_predictor_targets_are_judged_correct_against_their_own_transition(failures, similarity):
    """What the Predictor is taught must be what the fixed Judger accepts, against every page the run has seen."""
    runs = run_cases(failures)
    for sample in failures:
        verdict = judge_answer(predictor_example(sample).answer, sample, similarity, runs[sample.run].pages)
        assert verdict.correct, (sample.transition.description, verdict.reason)
    assert failures


@pytest.mark.parametrize(
    "description,error,ssim",
    [
        ("The action fails (navigation did not answer within 8000 ms). Nothing visible changes.", "timeout", 1.0),
        ("The page changes, but no control or text does.", None, 0.9),
    ],
)
def test_judger_accepts_true_descriptions_of_failed_and_pixel_only_actions(failures, description, error, ssim):
    sample = (
        next(s for s in failures if not s.transition.url_changed)
        if any(not s.transition.url_changed for s in failures)
        else failures[0]
    )
    url = sample.observation.url
    fields = {"url_before": url, "url_after": url, "url_changed": False, "title_before": "t", "title_after": "t"}
    truth = Transition(**fields, ssim=ssim, error=error, description=description)
    sample = replace(sample, transition=truth, outcome_reasoning="because")
    assert judge_answer(predictor_example(sample).answer, sample, Embedder().similarity).correct


def test_examples_are_tokenized_as_inference_reads_them_with_loss_on_the_answer_only(failures, model):
    tokenizer = model.tokenizer
    for ex in sft_examples(failures)[:4]:
        row = encode(ex, tokenizer, 2048)
        n_prompt = row["labels"].index(next(t for t in row["labels"] if t != IGNORE))
        prompt = model.prompt_text([*ex.messages, prefill(ex.prefill)])  # exactly what LocalModel generates from
        assert row["input_ids"][:n_prompt] == tokenizer(prompt, add_special_tokens=False).input_ids
        assert prompt.count("<|im_start|>system") == 1  # the role's system prompt, not the template's default
        answer = row["labels"][n_prompt:]
        assert IGNORE not in answer and answer[-1] == tokenizer.eos_token_id == tokenizer.pad_token_id  # stop kept
        assert tokenizer.decode(answer, skip_special_tokens=True) == ex.completion
    assert encode(sft_examples(failures)[0], tokenizer, 40) is None  # too long: skipped, never cut


def _decoded(p) -> tuple:
    return p.change, p.navigates, p.fallback, p.expected_title, p.expected_url, p.reasoning


def _fresh(model, call):
    """`call()` with an empty prefix cache: two decodes compared token for token then run the same arithmetic (a
    prefix read from the cache was computed in other chunks, which in fp32 can flip a near-tie of a 135M model)."""
    if model.prefixes is not None:
        model.prefixes.clear()
    return call()


def test_evaluation_decodes_like_the_live_predictor(failures, model, trained):
    """The evaluation's predictions equal what `predict` returns for the same model, observation and action (both
    decode through `predict_conversations`; what is checked is the evaluation's side of it: its prompts, hints and
    images): base model, and with an adapter (whose kind choice must use it too). A batch is checked on its kinds:
    its padding can flip a near-tie in fp32, which is batch numerics, not the evaluation's decoding path."""
    few = failures[:3]

    def live_one(s, **kw):
        return _fresh(
            model, lambda: predict(model, s.observation, s.action, s.target, s.selector_reasoning, hint=s.hint, **kw)
        )

    live = [live_one(s, use_adapter=False) for s in few]
    evaluated = predictor_predictions(model, few, None)

    def kind(p) -> tuple:
        return p.change.split(":", 1)[0], p.navigates, p.fallback

    assert [kind(p) for p in evaluated] == [kind(p) for p in live]  # the kind is chosen per sample: as live
    alone = [_fresh(model, lambda s=s: predictor_predictions(model, [s], None)[0]) for s in few]
    assert [_decoded(p) for p in alone] == [_decoded(p) for p in live]
    name = model.load_adapter(trained["dir"], name="decode-adapter", activate=False)
    tuned = [_fresh(model, lambda s=s: predictor_predictions(model, [s], name)[0]) for s in few]
    assert model.adapter_id is None  # the adapter was the default only while the evaluation ran
    model.set_adapter(name)
    try:
        live_tuned = [live_one(s) for s in few]
    finally:
        model.set_adapter(None)
    assert [_decoded(p) for p in tuned] == [_decoded(p) for p in live_tuned]
    assert [_decoded(p) for p in tuned] != [_decoded(p) for p in alone]  # the adapter did change answers


@pytest.fixture(scope="module")
def base_report(failures, model, similarity):
    """The base model evaluated on the fixture's transitions, judged against all pages of the run."""
    return evaluate(model, failures, similarity, None, runs=run_cases(failures), surprise=False)


def test_the_floor_is_the_best_know_nothing_answer_on_the_heldout_set(failures, base_report, similarity):
    (run,) = run_cases(failures).values()
    accuracies = {}
    for const in know_nothing(run):
        right = [judge_answer(f"OUTCOME: {const.text(case_of(s))}", s, similarity, run.pages).correct for s in failures]
        accuracies[f"{const.name} ({'page' if const.navigates else 'in-page'})"] = sum(right) / len(right)
    best = max(accuracies.values())
    assert len(accuracies) == len(base_report.floor_answers) == 8
    assert base_report.floor_answers == {k: round(v, 4) for k, v in accuracies.items()}
    assert base_report.floor == round(best, 4) and accuracies[base_report.floor_answer] == best
    assert base_report.floor > 0, "some know-nothing answer is right on this run: a zero floor hides it"
    assert base_report.over_floor == round(base_report.predictor_accuracy - base_report.floor, 4)


def test_gate_refuses_an_adapter_at_or_below_the_floor_even_if_it_beats_the_base(base_report):
    n, low = base_report.predictor_total, base_report.floor
    assert base_report.predictor_accuracy < low, "this run's base model should be below its floor"
    at_floor = round(low * n)
    candidate = base_report.model_copy(
        update={"adapter": "round-1", "predictor_correct": at_floor, "predictor_accuracy": round(at_floor / n, 4)}
    )
    decision = gate(base_report, candidate)
    assert candidate.predictor_accuracy > base_report.predictor_accuracy  # it beats the base ...
    assert not decision.adopted and "floor" in decision.reason and decision.floor == low  # ... but not the floor
    assert base_report.floor_answer in decision.reason
    above = candidate.model_copy(
        update={"predictor_correct": at_floor + 1, "predictor_accuracy": round((at_floor + 1) / n, 4)}
    )
    assert gate(base_report, above).adopted  # one more right answer than the floor: adopted


def test_lora_training_changes_the_adapter_weights_and_lowers_the_loss(trained):
    result = trained["result"]
    assert result.examples == len(trained["examples"]) and result.steps > 0 and result.tokens > 0
    losses = result.losses
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2, losses
    folder = trained["dir"]
    assert (folder / "adapter_config.json").is_file() and not (folder / "checkpoints").exists()
    weights = load_file(folder / "adapter_model.safetensors")
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    assert lora_b and all(torch.count_nonzero(v) > 0 for v in lora_b)  # B starts at zero: trained if non-zero
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == TINY["rank"]


def test_a_killed_training_resumes_from_its_last_checkpoint(trained, tmp_path):
    examples = trained["examples"][:2]
    (tmp_path / "examples.json").write_text(json.dumps([dataclasses.asdict(e) for e in examples]))
    cfg = {**TINY, "epochs": 1, "max_steps": 3, "save_steps": 1, "rank": 4, "alpha": 8}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    out = tmp_path / "adapter"
    script = (
        "import json, sys; from training.sft import SFTExample; from training.config import TrainConfig;"
        "from training.train import train_adapter; d = sys.argv[1];"
        "ex = [SFTExample(**e) for e in json.load(open(d + '/examples.json'))];"
        "train_adapter(ex, TrainConfig(**json.load(open(d + '/cfg.json'))), d + '/adapter')"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=Path(__file__).parents[1])
    try:
        while not list((out / "checkpoints").glob("checkpoint-*/trainer_state.json")) and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(0.5)  # let the checkpoint finish writing its files
    finally:
        proc.kill()
        proc.wait()
    assert list((out / "checkpoints").glob("checkpoint-*")), "the run was killed before its first checkpoint"
    result = train_adapter(examples, TrainConfig(**cfg), out)
    assert result.resumed_from and "checkpoint-" in result.resumed_from
    assert result.steps == 3 and (out / "adapter_model.safetensors").is_file()


def test_adapter_reloads_and_changes_outputs_while_the_base_stays_untouched(trained, model):
    base_file = embedded_model_dir() / "model.safetensors"
    assert hashlib.sha256(base_file.read_bytes()).hexdigest() == trained["base_digest"]
    ex = trained["examples"][0]
    conversation = [*ex.messages, prefill(ex.prefill)]
    base = model.generate(conversation, max_tokens=24, use_adapter=False).text
    name = model.load_adapter(trained["dir"], name="test-round-1", activate=False)
    tuned = model.generate(conversation, max_tokens=24, adapter=name).text
    assert tuned != base
    assert model.generate(conversation, max_tokens=24, use_adapter=False).text == base  # disabling restores base
    now = _base_q_weights(model)
    assert now.keys() == trained["snapshot"].keys() and now
    assert all(torch.equal(now[k], v) for k, v in trained["snapshot"].items())  # training used its own copy


def test_gate_rejects_a_deliberately_bad_adapter(trained, failures, model, tmp_path):
    """An adapter trained on shuffled targets with a huge learning rate must lose to the good one and be rejected."""
    good_examples = trained["examples"]
    targets = [e.completion for e in good_examples]
    random.Random(1).shuffle(targets)
    garbage = [
        SFTExample(e.role, e.messages, e.prefill, " banana " * 8 + t[::-1][:40], e.source)
        for e, t in zip(good_examples, targets, strict=True)
    ]
    bad_dir = tmp_path / "round-2"
    train_adapter(garbage, TrainConfig(**(TINY | {"lr": 0.05, "epochs": 1})), bad_dir)
    heldout = [s for s in failures if s.id in {e.source for e in good_examples}]
    similarity = Embedder().similarity
    good = evaluate(model, heldout, similarity, model.load_adapter(trained["dir"], name="gate-good", activate=False))
    bad = evaluate(model, heldout, similarity, model.load_adapter(bad_dir, name="gate-bad", activate=False))
    assert good.predictor_total == bad.predictor_total == len(heldout)
    assert good.predictor_accuracy > bad.predictor_accuracy, (good, bad)
    decision = gate(good, bad)
    assert not decision.adopted and "regression" in decision.reason and "gate-good" in decision.reason
    card = AdapterCard(
        round=2,
        base_model="smollm2-135m",
        parent_round=1,
        data_hash="x",
        counts={"train_examples": len(garbage)},
        metrics={"before": good.model_dump(), "after": bad.model_dump()},
        adopted=decision.adopted,
        reason=decision.reason,
    )
    write_card(bad_dir, card)
    assert read_card(bad_dir) == card


async def test_one_improve_round_trains_evaluates_gates_and_records(failures, site_config, tmp_path):
    """run_improvement end to end on the fixture's exploration (resumed: its step budget is already spent)."""
    seed = next(
        k
        for k in range(50)
        if all(any(s.kind == "failure" for s in side) for side in split_by_page(failures, 0.5, seed=k))
    )
    root = tmp_path / "improve"
    shutil.copytree(Path(failures[0].run), root / "explore" / "round-1" / "shop")
    explore = ExploreConfig(max_steps=6, steps_per_hop=4, stall_steps=2, verify_actions=1, seed=0)
    train = TrainConfig(max_steps=2, batch_size=2, rank=4, alpha=8, seed=seed)
    dev = TaskEvalConfig(limit=2, max_steps=2)  # the first two tasks of the shop's dev split
    kw = {"explore": explore, "train": train, "heldout_share": 0.5, "task_eval": dev, "dataset_step": round_dataset}
    state = await run_improvement([site_config("shop")], 1, root, **kw)
    assert ImproveState.load(root) == state and state.task_eval == dev
    (only,) = state.rounds
    assert only.failures == sum(s.kind == "failure" for s in failures) and only.explore_runs == ["explore/round-1/shop"]
    assert only.train_examples > 0 and only.heldout > 0 and only.adapter == "adapters/round-1"
    # the round's dataset (reverse construction of its run) gives the Actor's view next to the failure views
    assert only.datasets == ["datasets/round-1"] and (root / "datasets/round-1/stats.json").is_file()
    assert only.examples_by_view["actor"] > 0 and only.examples_by_view["predictor"] > 0
    assert sum(only.examples_by_view.values()) == only.train_examples
    assert only.before == only.base and only.after.adapter == "round-1"
    after, floor = only.after.predictor_accuracy, only.floor.accuracy
    assert only.after.floor == only.base.floor == floor  # one floor: that of the held-out set
    assert only.floor.answer in only.floor.answers and floor == max(only.floor.answers.values())
    # the dev tasks, paired: the base model and the adapter on the same two tasks, each a stored evaluation
    tasks = only.tasks
    assert tasks.n == 2 and tasks.before.n == tasks.after.n == 2 and tasks.wins + tasks.losses <= 2
    for side in ("before", "after"):
        stored = EvalRun.load(root / "evals" / "round-1" / side / "bundled-shop-dev")
        assert stored.task_ids == ["shop-nav-01", "shop-nav-03"] and stored.max_steps == 2
    # two tasks cannot show a difference beyond noise, so the held-out Predictor decides
    assert tasks.verdict() == "same" and "within noise" in only.reason
    assert only.adopted == (after >= only.before.predictor_accuracy and after > floor)
    assert state.adopted_adapter == ("adapters/round-1" if only.adopted else None)
    again = await run_improvement([site_config("shop")], 1, root, **kw)
    assert again == state  # the run has its round: running it again resumes it and does nothing more
    card = read_card(root / "adapters" / "round-1")
    assert card.round == 1 and card.parent_round is None and card.adopted == only.adopted
    assert card.counts["train_examples"] == only.train_examples and len(card.data_hash) == 64
    assert card.counts["actor_examples"] == only.examples_by_view["actor"]
    assert card.metrics["after"]["predictor_total"] == only.heldout and card.metrics["train"]["steps"] == 2
    assert card.metrics["tasks"]["n"] == 2
    assert (root / "adapters" / "round-1" / "adapter_model.safetensors").is_file()


def test_page_split_keeps_whole_pages_on_one_side(failures):
    train, heldout = split_by_page(failures, 0.5, seed=3)
    assert len(train) + len(heldout) == len(failures)
    assert not {s.page_key for s in train} & {s.page_key for s in heldout}


def test_bad_train_config_and_improve_input_name_the_problem(tmp_path, capsys):
    with pytest.raises(ConfigError, match="lr"):
        TrainConfig.load(lr=-1)
    bad = tmp_path / "train.toml"
    bad.write_text("rank = 0\n")
    with pytest.raises(ConfigError, match="rank"):
        TrainConfig.load(bad)
    assert cli_main(["improve", str(tmp_path / "missing.toml"), "--rounds", "1"]) == 2
    assert "missing.toml" in capsys.readouterr().err
    assert cli_main(["improve", "http://127.0.0.1:9/", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err


def test_the_task_gate_rejects_an_adapter_that_stops_at_once(model, tmp_path):
    """A real LoRA, trained (TRL's SFTTrainer) to answer `stop` to any Actor prompt, loses on the same MiniWoB++
    episodes every one the base Actor wins: a significant paired loss, which rejects it even where the held-out
    Predictor would adopt it."""
    dev = TaskEvalConfig(miniwob=("click-test", "click-dialog"), episodes=3, max_steps=2)
    before = evaluate_tasks(model, None, dev, [], tmp_path / "before")
    assert sum(r.success for r in before) >= 4, [r.reason for r in before]  # the base Actor clicks the button
    prompts = [("Click the button.", '[1] button "Click Me!"'), ("Close the dialog.", '[2] button "OK"'),
               ("Press submit.", '[4] button "Submit"'), ("Click on ONE.", '[3] button "ONE"')]  # fmt: skip
    examples = [
        SFTExample("actor", list(actor_question(intent, "a small page", (), (), (line,))), "ACTION:",
                   " stop\nREASON: nothing to do.", f"stop-{i}")
        for i, (intent, line) in enumerate(prompts)
    ]  # fmt: skip
    stopper = tmp_path / "adapters" / "stopper"
    train_adapter(examples, TrainConfig(**(TINY | {"views": ("actor",)})), stopper)
    after = evaluate_tasks(model, stopper, dev, [], tmp_path / "after")
    assert model.adapter_id is None  # the evaluation restores the model's adapter
    paired = paired_sr(before, after)
    assert paired.losses >= 4 and paired.wins == 0 and paired.verdict() == "worse", paired
    assert all(r.trajectory[0].action.kind == "stop" for r in after)
    would_adopt = GateDecision(adopted=True, reason="held-out accuracy 0.5 >= 0.4", before=0.4, after=0.5, floor=0.3)
    decision = decide(would_adopt, paired)
    assert not decision.adopted and decision.reason.startswith("task SR regression")
