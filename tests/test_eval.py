"""`scalehop eval` end to end in subprocesses: real Chromium, the bundled sites (served by the command itself),
the embedded model for the Actor, the installed MiniWoB++ package; a killed evaluation resumed; the report's
agent-evaluation section; one-line user errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markupsafe import escape

from evals.results import EvalRun, TaskResult
from tests.lora import save_random_lora

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli"]


def scalehop(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the CLI to the end; stdout and stderr as text."""
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def summary(done: subprocess.CompletedProcess) -> dict:
    """The `--json` summary: the last line of stdout."""
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def results(folder: Path) -> dict[str, TaskResult]:
    """task id -> result of every finished task in an evaluation folder."""
    return {r.task_id: r for r in map(TaskResult.load, sorted((folder / "results").glob("*.json")))}


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The message of a user error: exit 2 and one error line, last on stderr (after any progress bars)."""
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-2000:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("scalehop: error: ")]
    assert errors == lines[-1:] and "Traceback" not in done.stderr, done.stderr
    return errors[0]


@pytest.mark.slow
def test_actor_on_the_bundled_shop_with_the_embedded_model(tmp_path):
    """Two dev tasks, two steps each, with the default (embedded) model: about 1-2 min on a busy 2-core machine."""
    out = tmp_path / "actor"
    s = summary(scalehop("eval", "bundled:shop:dev", "--policy", "actor", "--limit", "2", "--max-steps", "2",
                         "--json", "--out", str(out)))  # fmt: skip
    assert set(s) >= {"sr", "avg_steps", "tasks"} and 0.0 <= s["sr"] <= 1.0
    assert len(s["tasks"]) == 2
    for task in s["tasks"]:
        assert set(task) == {"task_id", "success", "steps", "answer", "reason"}
        assert 0 <= task["steps"] <= 2 and task["reason"]
    on_disk = results(out)
    assert sorted(on_disk) == sorted(t["task_id"] for t in s["tasks"])
    run = EvalRun.load(out)
    assert (run.policy, run.max_steps, run.adapter) == ("actor", 2, None) and run.model  # the embedded model
    for r in on_disk.values():
        assert r.trajectory, r.task_id
        for step in r.trajectory:
            # an action the Actor's answer parsed into, or the fallback, recorded as one
            assert step.system == "actor" and step.fallback == step.reasoning.startswith("fallback:"), step
            assert step.action.kind in ("stop", "back", "scroll") or step.action.mark is not None, step
            assert step.tokens > 0 and step.screenshot
        assert r.tokens == sum(step.tokens for step in r.trajectory) > 0
        assert r.fallbacks == sum(step.fallback for step in r.trajectory)


def test_killed_eval_resumes_without_rerunning_finished_tasks(tmp_path):
    out = tmp_path / "resume"
    args = ["eval", "bundled:shop", "--limit", "4", "--policy", "random", "--max-steps", "3", "--out", str(out)]
    first = subprocess.Popen(
        [*CLI, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        while not list((out / "results").glob("*.json")) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the CLI with its browser, as a crash would
        first.wait()
    finished = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "results").glob("*.json")}
    assert 1 <= len(finished) < 4, "kill it after the first task and before the last"
    eval_json = (out / "eval.json").read_bytes(), (out / "eval.json").stat().st_mtime_ns
    time.sleep(0.05)  # a rewrite would get a later mtime

    done = scalehop(*args, "--json")
    assert [t["task_id"] for t in summary(done)["tasks"]] == EvalRun.load(out).task_ids
    assert len(results(out)) == 4
    for name, (content, mtime) in finished.items():
        path = out / "results" / name
        assert (path.read_bytes(), path.stat().st_mtime_ns) == (content, mtime), f"{name} was run again"
    assert ((out / "eval.json").read_bytes(), (out / "eval.json").stat().st_mtime_ns) == eval_json

    other = one_line_error(scalehop(*[a if a != "random" else "actor" for a in args]))
    assert str(out) in other and "policy" in other


def test_miniwob_through_the_cli(tmp_path):
    s = summary(scalehop("eval", "miniwob:click-button", "--policy", "random", "--episodes", "2", "--max-steps", "2",
                         "--json", "--out", str(tmp_path / "miniwob")))  # fmt: skip
    assert [t["task_id"] for t in s["tasks"]] == ["click-button:0", "click-button:1"]
    assert all("reward" in t["reason"] for t in s["tasks"])
    on_disk = results(tmp_path / "miniwob")
    for t in s["tasks"]:
        check = on_disk[t["task_id"]].checks[0]
        assert check.eval_type == "miniwob_reward" and (check.score == 1.0) == t["success"]


@pytest.mark.slow
def test_adapters_side_by_side(tmp_path):
    """`--adapters base,PATH`: one evaluation per model on the same episodes, each in its own folder, a table row
    each and `by_adapter` under --json. The adapter is a real peft LoRA with seeded noise in B (no training), so
    the Actor's decisions differ between the two rows only if the adapter was applied."""
    from explorer.models import embedded_model_dir

    adapter = save_random_lora(tmp_path / "round-1", embedded_model_dir())
    out = tmp_path / "side"
    done = scalehop("eval", "miniwob:click-button", "--policy", "actor", "--episodes", "1", "--max-steps", "2",
                    "--adapters", f"base,{adapter}", "--json", "--out", str(out))  # fmt: skip
    s = summary(done)
    assert set(s["by_adapter"]) == {"base", "round-1"}
    assert s["tasks"] == s["by_adapter"]["base"]["tasks"]  # the top-level fields are the first model's
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.split()[:1] in (["base"], ["round-1"])]
    assert rows == ["base", "round-1"]  # the side-by-side table
    runs = {name: EvalRun.load(out / name) for name in ("base", "round-1")}
    assert runs["base"].adapter == "base" and runs["round-1"].adapter == str(adapter)
    assert runs["base"].task_ids == runs["round-1"].task_ids == ["click-button:0"]
    traces = {name: results(out / name)["click-button:0"].trajectory for name in runs}
    assert all(traces.values())
    first = {name: trace[0] for name, trace in traces.items()}
    assert all(f.confidence is not None for f in first.values())
    # the adapter changed the Actor's first decision: its probability of the chosen mark, at least (a small random
    # LoRA need not flip a greedy choice between two buttons)
    assert first["base"].confidence != first["round-1"].confidence


def test_report_shows_the_evaluation(tmp_path):
    """A string_match task the random floor cannot answer (it never stops with an answer): a failed trajectory."""
    out = tmp_path / "evals" / "random"
    s = summary(scalehop("eval", "bundled:shop:dev", "--tasks", "shop-nav-01,shop-info-01", "--policy", "random",
                         "--max-steps", "2", "--json", "--out", str(out)))  # fmt: skip
    failed = results(out)["shop-info-01"]
    assert not failed.success and len(failed.trajectory) == 2
    done = scalehop("report", str(tmp_path / "evals"))
    assert done.returncode == 0, done.stderr[-2000:]
    page = (tmp_path / "evals" / "report.html").read_text()
    section = page[page.index('<section id="evals">') :]
    section = section[: section.index("</section>")]
    assert "Agent evaluation" in section and "bundled:shop:dev" in section and "policy random" in section
    for task in s["tasks"]:
        assert f"<td>{task['task_id']}</td>" in section
    assert "failed: shop-info-01" in section
    for step in failed.trajectory:
        assert f"step {step.step} · random" in section
        assert escape(step.action.describe()) in section


def test_user_errors_are_one_line(tmp_path):
    unknown = one_line_error(scalehop("eval", "bundled:nosuch", "--policy", "random", "--out", str(tmp_path / "a")))
    assert "bundled:nosuch" in unknown and "bundled:shop" in unknown
    tasks = tmp_path / "tasks.json"
    task = {"task_id": 1, "start_url": "http://127.0.0.1:9/", "intent": "x", "eval": {"eval_types": ["func_match"]}}
    tasks.write_text(json.dumps([task]))
    unsupported = one_line_error(scalehop("eval", str(tasks), "--policy", "random", "--out", str(tmp_path / "b")))
    assert str(tasks) in unsupported and "func_match" in unsupported and "url_match" in unsupported
    task["eval"] = {"eval_types": ["url_match"], "reference_url": "http://127.0.0.1:9/done"}
    tasks.write_text(json.dumps([task]))
    missing = tmp_path / "no-dataset"
    no_dataset = one_line_error(scalehop("eval", str(tasks), "--shots", "2", "--dataset", str(missing)))
    assert str(missing) in no_dataset and "scalehop dataset build" in no_dataset
    assert "--dataset" in one_line_error(scalehop("eval", str(tasks), "--shots", "2"))
    assert "--shots" in one_line_error(scalehop("eval", str(tasks), "--dataset", str(missing)))
