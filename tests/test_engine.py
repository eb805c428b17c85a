"""The exploration engine on a bundled site: a short SCALE run with the embedded model, and the baselines."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from explorer.config import BrowserConfig, ExploreConfig
from explorer.graph import ExplorationGraph
from explorer.loop import Engine
from explorer.records import Node, Transition
from explorer.rows import RecordRow
from explorer.run import run_exploration
from explorer.store import resume
from explorer.summary import RunMetrics

FIRST_STEPS, MORE_STEPS, MAX_STEPS = 46, 6, 58


def _events(store) -> dict[str, bool]:
    """Which of the SCALE-Hop events the acceptance asks for the run holds so far."""
    kinds = [s.kind for s in store.steps()]
    full = any(n.status == "full" for n in store.load_nodes())
    return {"understood": store.count_records("understood") > 0, "full": full, "return": "return" in kinds}


@pytest.fixture(scope="module")
async def scale_run(site_config, tmp_path_factory):
    """A SCALE run on the classifieds site (embedded model, quick stall and one-action verification), resumed in
    short chunks until it holds a right prediction, a fully explored node and a backtrack (at most MAX_STEPS
    steps). Under the rule-v2 Judger the embedded model's verifications rarely pass on the forum (no full node
    in 63 steps); on classifieds (seed 1) all three events held by step 46 (2026-12-06, state identity with
    structure and masks). Which step they come at depends on the trajectory: started at 22 steps and resumed
    in chunks of 6, the same seed held no full node by step 58."""
    runs = tmp_path_factory.mktemp("runs")
    site, steps = site_config("classifieds"), FIRST_STEPS
    while True:
        cfg = ExploreConfig(max_steps=steps, steps_per_hop=4, stall_steps=1, verify_actions=1, seed=1)
        again = "scale" if steps > FIRST_STEPS else None
        summary = await run_exploration(site, cfg, BrowserConfig(), runs_dir=runs, run_id="scale", resume_run=again)
        store, graph = resume(runs / "scale")
        if all(_events(store).values()) or steps >= MAX_STEPS:
            break
        store.close()
        steps += MORE_STEPS
    yield summary, store, graph
    store.close()


async def test_scale_run_stops_on_its_step_budget(scale_run):
    summary, store, graph = scale_run
    assert summary.stopped_by == "steps" and summary.steps == store.last_step() + 1 >= FIRST_STEPS
    assert summary.states == len(graph.g) > 1
    assert summary.failures == store.count_records("failure") and summary.strategy == "scale"
    assert summary.states_merged <= summary.states and summary.tokens > 0
    metrics = RunMetrics.load(store.dir)
    assert metrics.summary == summary
    curves = metrics.curves
    assert len(curves["states"]) == summary.steps and curves["states"][-1] == summary.states
    assert curves["failures"][-1] == summary.failures


async def test_every_role_answer_was_written_under_its_grammar(scale_run):
    """Constrained decoding on the local backend: every Selector and Predictor answer of the run (its resumed
    parts added up) was produced under the role's grammar, and none needed the repair or the fallback."""
    _, store, _ = scale_run
    roles = store.meta().roles
    assert {"selector", "predictor"} <= set(roles)
    for role, counts in roles.items():
        assert counts["calls"] > 0 and counts["constrained"] == counts["calls"], (role, counts)
        assert counts["repairs"] == 0 and counts["fallbacks"] == 0, (role, counts)


async def test_failure_records_hold_the_full_explore_record(scale_run):
    _, store, graph = scale_run
    failures = store.records("failure")
    assert failures, "the base model should mispredict something"
    for row in failures:
        rec = row.record
        assert row.kind == "failure" and not rec.verdict.correct and rec.verdict.judge == "rule-v2"
        assert rec.observation_text.startswith("Page: ") and rec.action.element_key
        assert rec.selector_reasoning and rec.outcome_reasoning and rec.transition.description
        assert rec.node_from == row.node_from and rec.node_to == row.node_to
        assert rec.node_from in graph.g and rec.node_to in graph.g
        assert store.blob_path(rec.screenshot).exists() and store.blob_path(rec.som_screenshot).exists()
        assert rec.model_id == "smollm2-135m" and rec.step == row.step
        obs = store.observation(rec.observation)  # the full O_i, to rebuild prompts and page QA from
        assert obs.url == rec.url and obs.text == rec.observation_text and obs.elements
    for node in graph.nodes():
        assert store.observation(node.observation).title == node.title


def test_judge_audit_cli_on_a_scale_run(scale_run):
    """`scalehop judge audit RUN --json` on the run: its last line is the JSON summary, and the Judger accepts
    what really happened and not another transition's outcome."""
    _, store, _ = scale_run
    cmd = [sys.executable, "-m", "flows.cli", "judge", "audit", str(store.dir), "--json"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["judge"] == "rule-v2" and summary["transitions"] == len(store.records())
    assert summary["true_accept"] >= 0.95 and summary["swap_false_accept"] <= 0.05
    assert summary["constant_false_accept"] == max(summary["constants"].values())
    assert "site name (page)" in summary["constants"] and "nothing changes (in-page)" in summary["constants"]


async def test_a_right_prediction_returns_to_the_node_and_picks_again(scale_run):
    _, store, graph = scale_run
    steps = store.steps()
    understood = store.records("understood")
    assert understood, "no right prediction in the run"
    for row in understood:
        node = row.node_from
        later = [s for s in steps if s.step > row.step]
        picks = [i for i, s in enumerate(later) if s.kind in ("select", "verify")]
        if not picks or graph.node(node).status == "full" or any(s.kind == "start" for s in later[: picks[0]]):
            continue  # the budget ended (a resumed chunk starts over), or the node was done: no resample there
        assert later[picks[0]].node_from == node  # the Selector (or verification) picks again at the same node
        if row.node_to != node:  # the action left the node: the explorer went back first
            assert any(s.kind == "return" for s in later[: picks[0]])


async def test_verification_makes_nodes_full_and_the_explorer_backtracks(scale_run):
    _, store, graph = scale_run
    assert _events(store)["full"], "no node reached `full` through verification"
    steps = store.steps()
    for node in (n for n in graph.nodes() if n.status == "full"):
        assert any(s.node_from == node.id and s.kind == "verify" for s in steps)  # full only through verification
    kinds = [s.kind for s in steps]
    assert kinds[0] == "start" and "verify" in kinds and "return" in kinds
    assert set(kinds) <= {"start", "select", "verify", "return"}  # SCALE never jumps to the start by itself


async def test_resuming_a_spent_scale_run_loads_no_model_and_opens_no_page(scale_run, site_config, tmp_path):
    """A SCALE run resumed after it spent its steps returns its summary as it was: the model (here one that cannot
    load) is not loaded and the site (here gone) is not opened, so re-reading a cached run is no error."""
    from explorer.models import ModelConfig

    summary, store, _ = scale_run
    shutil.copytree(store.dir, tmp_path / "scale")  # the module's run stays as the other tests read it
    gone = site_config("classifieds").model_copy(update={"start_url": "http://127.0.0.1:9/"})
    cfg = ExploreConfig(max_steps=summary.steps, seed=1)
    missing = ModelConfig(model=str(tmp_path / "no-such-model"))
    again = await run_exploration(gone, cfg, BrowserConfig(), missing, runs_dir=tmp_path, resume_run="scale")
    assert again.stopped_by == "steps" and again.steps == summary.steps and again.states == summary.states


def test_transition_memory_folds_numbers_and_rebuilds_from_records():
    from explorer.memory import TransitionMemory
    from explorer.records import Action

    like = Action(kind="click", mark=3, element_key="k", label='button "Like · 11"')
    transition = Transition(
        url_before="u",
        url_after="u",
        url_changed=False,
        title_before="T",
        title_after="T",
        ssim=0.99,
        description='Changes: button "Like · 11" -> "Like · 12".',
    )
    memory = TransitionMemory()
    assert memory.hint(like) is None
    memory.remember(like, transition)
    other = like.model_copy(update={"label": 'button "Like · 40"', "mark": 9})  # the same kind of action
    hint = memory.hint(other)
    assert hint.startswith(like.describe()) and hint.endswith(transition.description)
    assert memory.hint(like.model_copy(update={"label": 'button "Reply"'})) is None
    payload = {"action": like.model_dump(mode="json"), "transition": transition.model_dump(mode="json")}
    rebuilt = TransitionMemory.from_records([RecordRow("0-0", 0, "understood", "n0", "n0", payload)])
    assert rebuilt.hint(other) == hint and len(rebuilt) == 1


async def test_scale_with_several_contexts_runs_its_budget_on_one_batched_model(site_config, tmp_path):
    """Two browser contexts on one model (`BatchedModel`): both start on the same node and share it rather than
    end the run as "frontier empty" (they did, after 5 steps of 12 with 4 contexts); every role answer still went
    through the grammar, and the contexts' calls were counted once each."""
    cfg = ExploreConfig(max_steps=6, contexts=2, seed=0)
    summary = await run_exploration(site_config("shop"), cfg, BrowserConfig(), runs_dir=tmp_path, run_id="two")
    assert summary.stopped_by == "steps" and 6 <= summary.steps <= 8
    store, _ = resume(tmp_path / "two")
    try:
        roles, selects = store.meta().roles, [s for s in store.steps() if s.kind == "select"]
    finally:
        store.close()
    assert roles["selector"]["calls"] == len(selects) and roles["selector"]["constrained"] == len(selects)
    assert roles["predictor"]["repairs"] == roles["predictor"]["fallbacks"] == 0


@pytest.mark.parametrize("strategy", ["random", "bfs", "bfs-click", "greedy"])
async def test_baselines_share_the_engine(site_config, tmp_path, strategy):
    cfg = ExploreConfig(strategy=strategy, max_steps=12, seed=0)
    summary = await run_exploration(site_config("shop"), cfg, BrowserConfig(), runs_dir=tmp_path, run_id=strategy)
    assert summary.stopped_by == "steps" and summary.states >= 3 and summary.failures == 0
    assert 12 <= summary.steps <= 14  # a multi-action return (BFS) may finish after the budget's check
    store, _ = resume(tmp_path / strategy)
    try:
        kinds, records = {s.kind for s in store.steps()}, store.records()
    finally:
        store.close()
    assert "start" in kinds and kinds <= {"start", "select", "return", "goto"} and not records


def test_an_exhausted_node_is_never_picked_again():
    graph = ExplorationGraph()
    for i, url in enumerate(("http://a.test/", "http://a.test/b")):
        graph.add_node(Node(id=f"n{i}", url=url, raw_url=url, screenshot="0" * 64, addressable=True))
    engine = Engine(
        None, ExploreConfig(), SimpleNamespace(graph=graph, next_step=0), None, None, None, "t"
    )  # only the graph
    assert engine.pick_node(1, "n0") == "n0"  # still frontier: stay
    engine.exhausted.add("n0")
    assert engine.pick_node(1, "n0") == "n1"
    engine.exhausted.add("n1")
    assert engine.pick_node(1, "n0") is None  # nothing left: the run stops ("frontier empty")
