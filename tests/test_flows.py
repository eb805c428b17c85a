"""Prefect: a real `prefect server` (SQLite) and a process work-pool worker run a deployment from prefect.yaml;
the flows run in-process against the same server."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    """`prefect server start` on a free port with its own PREFECT_HOME and SQLite database; stopped by PID."""
    home = tmp_path_factory.mktemp("prefect")
    port = _free_port()
    env = os.environ | {
        "PREFECT_HOME": str(home),
        "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home}/prefect.db",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PATH": f"{BIN}:{os.environ['PATH']}",
    }
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert server.poll() is None, (home / "server.log").read_text()[-2000:]
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    else:
        pytest.fail("prefect server did not start in 180 s:\n" + (home / "server.log").read_text()[-2000:])
    yield api, env | {"PREFECT_API_URL": api}
    server.terminate()
    server.wait(timeout=30)
    log.close()


def _prefect(env: dict, *args: str, timeout: float = 300) -> str:
    result = subprocess.run(
        [str(BIN / "prefect"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"prefect {' '.join(args)}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result.stdout


def test_a_worker_runs_the_explore_deployment_from_prefect_yaml(prefect_server, site_urls, tmp_path):
    api, env = prefect_server
    scheduled = subprocess.run(
        [str(BIN / "scalehop"), "schedule"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert scheduled.returncode == 0, scheduled.stderr
    pools = httpx.post(f"{api}/work_pools/filter", json={}).json()
    assert {p["name"] for p in pools} >= {"browsers", "gpus"}
    limits = httpx.post(f"{api}/concurrency_limits/filter", json={}).json()
    assert {(c["tag"], c["concurrency_limit"]) for c in limits} == {
        ("site:shop", 1),
        ("site:forum", 1),
        ("site:classifieds", 1),
    }
    deployments = httpx.post(f"{api}/deployments/filter", json={}).json()
    assert {d["name"] for d in deployments} >= {"explore-forum", "build-dataset", "self-improve", "report"}
    explore = json.dumps({"strategy": "random", "max_steps": 6, "seed": 0})
    params = ["--param", f"site={site_urls['forum']}", "--param", f"explore={explore}"]
    params += ["--param", f"runs_dir={tmp_path}", "--param", "run_id=scheduled"]
    _prefect(env, "deployment", "run", "explore_site/explore-forum", *params)
    _prefect(env, "worker", "start", "--pool", "browsers", "--run-once", timeout=600)

    forum = next(d for d in deployments if d["name"] == "explore-forum")
    filter_ = {"deployments": {"id": {"any_": [forum["id"]]}}, "limit": 20}
    runs = httpx.post(f"{api}/flow_runs/filter", json=filter_).json()
    states = [r["state"]["type"] for r in runs]
    assert states.count("COMPLETED") == 1 and set(states) == {"COMPLETED", "SCHEDULED"}, runs
    scheduled = [r for r in runs if r["state"]["type"] == "SCHEDULED"]
    assert all(r["expected_start_time"].endswith("02:30:00Z") for r in scheduled)  # prefect.yaml's cron
    db = tmp_path / "scheduled" / "run.sqlite"
    conn = sqlite3.connect(db)
    try:
        steps = conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        nodes = conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    finally:
        conn.close()
    assert steps == 6 and nodes >= 2  # the worker explored the forum into the store


def flow_run_log(api: str, flow_run_id: str, finished: int) -> str:
    """The messages the server holds for a flow run and its tasks, once `finished` runs have logged their final
    state (the client ships logs in batches)."""
    text = ""
    for _ in range(60):
        logs = httpx.post(f"{api}/logs/filter", json={"logs": {"flow_run_id": {"any_": [flow_run_id]}}}).json()
        text = "\n".join(entry["message"] for entry in logs)
        if sum(entry["message"].startswith("Finished in state") for entry in logs) >= finished:
            break
        time.sleep(1)
    return text


def test_self_improve_flow_explores_two_sites_then_trains_evaluates_and_gates(
    prefect_server, site_config, tmp_path, capfd
):
    import asyncio

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from explorer.config import ExploreConfig
    from flows.improve import self_improve
    from training.config import TrainConfig
    from training.state import ImproveState

    api, _ = prefect_server
    sites = [site_config("shop"), site_config("forum")]
    explore = ExploreConfig(max_steps=5, steps_per_hop=4, stall_steps=2, verify_actions=1, seed=0)
    train = TrainConfig(epochs=1, max_steps=2, batch_size=2, max_length=384, rank=4, alpha=8)
    with temporary_settings({PREFECT_API_URL: api}):
        state = asyncio.run(
            self_improve(sites, rounds=1, runs_dir=str(tmp_path), improve_id="imp", explore=explore, train=train)
        )
    root = tmp_path / "imp"
    assert ImproveState.load(root) == state
    (round1,) = state.rounds
    assert round1.explore_runs == ["explore/round-1/shop", "explore/round-1/forum"]
    for run in round1.explore_runs:
        conn = sqlite3.connect(root / run / "run.sqlite")
        assert conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0] == 5
        conn.close()
    assert round1.failures > 0 and round1.train_examples > 0 and round1.adapter == "adapters/round-1"
    assert (root / "adapters/round-1/adapter_config.json").exists()
    card = json.loads((root / "adapters/round-1/card.json").read_text())
    assert card["adopted"] == round1.adopted and card["round"] == 1
    out, err = capfd.readouterr()
    assert "LOAD_GLOBAL" not in out + err and "RETURN_VALUE" not in out + err  # nor on the console

    direct = {"flows": {"name": {"any_": ["self_improve"]}}, "flow_runs": {"deployment_id": {"is_null_": True}}}
    ours = httpx.post(f"{api}/flow_runs/filter", json=direct).json()  # not the deployment's scheduled runs
    assert [r["state"]["type"] for r in ours] == ["COMPLETED"]
    tasks = httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [ours[0]["id"]]}}}).json()
    names = sorted(t["task_key"].rsplit("-", 1)[0] for t in tasks)
    assert [n for n in names if "explore" in n] == ["explore_task", "explore_task"] and any("learn" in n for n in names)
    assert all(t["state"]["type"] == "COMPLETED" for t in tasks)
    logged = flow_run_log(api, ours[0]["id"], finished=len(tasks) + 1)  # the runs' log, as the server holds it
    assert logged.count("Finished in state Completed") == len(tasks) + 1
    # training fingerprints its rows with dill, which captures the printed `dis` of code objects: never in the log
    assert "LOAD_GLOBAL" not in logged and "RETURN_VALUE" not in logged
    tags = sorted(tag for t in tasks for tag in t["tags"] if tag.startswith("site:"))
    assert tags == ["site:forum", "site:shop"]  # one concurrency tag per site
    artifacts = httpx.post(f"{api}/artifacts/filter", json={"artifacts": {"key": {"any_": ["improve-imp"]}}}).json()
    assert artifacts and artifacts[0]["type"] == "table"


VAULT_ENV, VAULT_TOKEN = "SCALEHOP_TEST_VAULT_TOKEN", "tok-7hq2vd9w"
VAULT = {
    "/": f"""<title>Vault · {VAULT_TOKEN}</title><h1>Your vault {VAULT_TOKEN}</h1>
<p>API token: {VAULT_TOKEN}. Keep it safe.</p><a href="/keys">Keys</a> <a href="/help">Help for {VAULT_TOKEN}</a>
<input aria-label="Token" value="{VAULT_TOKEN}"> <input type="password" aria-label="Password">
<button onclick="alert('copied {VAULT_TOKEN}')">Copy</button>""",
    "/keys": f"<title>Keys</title><h1>Keys</h1><ul><li>Primary: {VAULT_TOKEN}</li></ul><a href='/'>Home</a>",
    "/help": "<title>Help</title><h1>Help</h1><p>Rotate your token often.</p><a href='/'>Home</a>",
}


class _Vault(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = VAULT.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(f"<!doctype html><html><body>{body or 'gone'}</body></html>".encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def prefect_console():
    """Prefect's console handlers print into a buffer for the test, then into the real stderr: they keep the stream
    of the test that first ran a flow in this process, which pytest has closed since."""
    import io
    import logging

    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]
    consoles = {h for lg in loggers for h in getattr(lg, "handlers", []) if isinstance(h, PrefectConsoleHandler)}
    printed = io.StringIO()
    for h in consoles:
        h.console.file = printed
    yield printed
    for h in consoles:
        h.console.file = sys.__stderr__


def test_a_planted_secret_reaches_no_artifact(prefect_server, prefect_console, tmp_path, capfd, monkeypatch):
    """A site shows its token (the value of a ${NAME} its config references) in the title, headings, text, a
    link's name, a field's value and an alert. Explored and built into a dataset by the Prefect flows, then
    reported: the token is in no file of the run or the dataset (SQLite, blobs, Arrow; Parquet decoded), not in the
    report, the console, the Python log, the server's flow-run logs or any Prefect artifact. (Pixels are not text:
    tests/test_guards.py checks masking.)"""
    import asyncio
    import io
    import logging

    import pyarrow.parquet as pq
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from explorer.config import ExploreConfig, LoginStep, SiteConfig
    from flows.dataset import build_dataset
    from flows.explore import explore_site
    from report.html import build_report

    api, _ = prefect_server
    monkeypatch.setenv(VAULT_ENV, VAULT_TOKEN)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Vault)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    login = [LoginStep(action="wait_for", selector="body", value="${" + VAULT_ENV + "}")]
    site = SiteConfig(name="vault", start_url=url, login=login, timeouts={"navigation_ms": 4000, "action_ms": 3000})
    printed = prefect_console
    log = io.StringIO()
    handler = logging.StreamHandler(log)  # every record of our packages, at DEBUG (kept from Prefect's handlers)
    ours = [logging.getLogger(name) for name in ("explorer", "synthesis", "flows", "report", "training")]
    saved = [(logger.level, logger.propagate) for logger in ours]
    for logger in ours:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(handler)
    try:
        with temporary_settings({PREFECT_API_URL: api}):
            explore = ExploreConfig(strategy="random", max_steps=8, seed=0)
            summary = asyncio.run(explore_site(site, explore, runs_dir=str(tmp_path / "runs"), run_id="vault"))
            stats = build_dataset([summary.run_dir], out=str(tmp_path / "dataset"))
        report = build_report(tmp_path / "runs")
    finally:
        for logger, (level, propagate) in zip(ours, saved, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        server.shutdown()
    assert summary.steps == 8 and sum(stats.counts.values()) > 0
    found = []
    files = [p for d in (tmp_path / "runs", tmp_path / "dataset") for p in d.rglob("*") if p.is_file()]
    for path in files:
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).drop_columns(_image_columns(path)).to_pylist(), default=str)
            found += [path] if VAULT_TOKEN in text else []
        elif path.suffix != ".png" and VAULT_TOKEN.encode() in path.read_bytes():
            found.append(path)
    assert not found, found
    assert b"[SECRET]" in (tmp_path / "runs/vault/run.sqlite").read_bytes()  # the page was seen, redacted
    assert any(p.suffix == ".arrow" for p in files) and VAULT_TOKEN not in report.read_text()
    out, err = capfd.readouterr()
    assert log.getvalue() and VAULT_TOKEN not in log.getvalue() + out + err + printed.getvalue()
    # the flow runs that ran here (not the deployment's scheduled runs: they never log)
    done = {"deployment_id": {"is_null_": True}, "state": {"type": {"any_": ["COMPLETED"]}}}
    names = {"name": {"any_": ["explore_site", "build_dataset"]}}
    runs = httpx.post(f"{api}/flow_runs/filter", json={"flows": names, "flow_runs": done}).json()
    assert {r["name"] for r in runs} and len(runs) >= 2, runs
    for run in runs:
        assert VAULT_TOKEN not in flow_run_log(api, run["id"], finished=1)
    artifacts = httpx.post(f"{api}/artifacts/filter", json={}).json()
    assert {a["key"] for a in artifacts} >= {"explore-vault", "dataset"}
    assert VAULT_TOKEN not in json.dumps(artifacts)


def _image_columns(path: Path) -> list[str]:
    """The image columns of a Parquet file (pixels, not text)."""
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    return [name for name in names if "screenshot" in name or name in ("goal_image", "images")]


def test_the_explore_flow_on_an_unreachable_site_fails_at_once_with_the_one_line_error(
    prefect_server, prefect_console, tmp_path
):
    """A start URL nothing answers: the flow run fails with observe's `cannot reach` line, the task is not retried
    (a user error fails the same way every time) and no run folder is left."""
    import asyncio

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from explorer.config import ExploreConfig
    from explorer.errors import SiteUnreachable
    from flows.explore import explore_site

    api, _ = prefect_server
    with temporary_settings({PREFECT_API_URL: api}), pytest.raises(SiteUnreachable, match="cannot reach"):
        explore = ExploreConfig(strategy="random", max_steps=2)
        asyncio.run(explore_site("http://127.0.0.1:9/", explore, runs_dir=str(tmp_path / "runs"), run_id="down"))
    assert not (tmp_path / "runs" / "down").exists()
    failed = {"flows": {"name": {"any_": ["explore_site"]}}, "flow_runs": {"state": {"type": {"any_": ["FAILED"]}}}}
    (run,) = httpx.post(f"{api}/flow_runs/filter", json=failed).json()
    tasks = httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [run["id"]]}}}).json()
    assert [t["run_count"] for t in tasks] == [1]  # one try: no retry of a user error
