"""`scalehop observe` on a bundled site, a third-party web app and a static page; one-line user errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def scalehop(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    import os

    full_env = {**os.environ, **(env or {})}
    cmd = [sys.executable, "-m", "flows.cli", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=full_env)


def check_observation_dir(out: Path) -> dict:
    record = json.loads((out / "observation.json").read_text())
    assert (out / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "som.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for field in ["url", "title", "elements", "screenshot", "som_screenshot", "text", "viewport", "timestamp"]:
        assert field in record
    for el in record["elements"]:
        for field in ["mark", "tag", "role", "name", "value", "href", "bbox", "visible", "enabled", "frame", "key"]:
            assert field in el
    return record


def test_observe_bundled_site(site_urls, tmp_path):
    result = scalehop("observe", site_urls["forum"], "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    record = check_observation_dir(tmp_path)
    assert summary["elements"] == len(record["elements"]) > 10
    assert record["status"] == 200


def test_observe_third_party_web_app(tmp_path):
    """Python's own pydoc HTTP server: a web app nobody here wrote."""
    server = subprocess.Popen(
        [sys.executable, "-m", "pydoc", "-n", "127.0.0.1", "-p", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = server.stdout.readline()
        url = re.search(r"http://\S+", line).group(0)
        result = scalehop("observe", url, "--out", str(tmp_path))
        assert result.returncode == 0, result.stderr
        record = check_observation_dir(tmp_path)
        assert "Pydoc" in record["title"]
        assert any(e["role"] == "link" for e in record["elements"])
        assert any(e["role"] in ("textbox", "searchbox") for e in record["elements"])
    finally:
        server.terminate()
        server.wait(10)


def test_observe_static_html_page(tmp_path):
    page = tmp_path / "static.html"
    page.write_text(
        "<html><head><title>Static</title></head><body><h1>Plain page</h1>"
        "<a href='other.html'>Other</a><button>Press</button><input placeholder='Your name'></body></html>"
    )
    out = tmp_path / "out"
    result = scalehop("observe", page.as_uri(), "--out", str(out))
    assert result.returncode == 0, result.stderr
    record = check_observation_dir(out)
    assert record["title"] == "Static" and record["headings"] == ["Plain page"]
    assert [e["name"] for e in record["elements"]] == ["Other", "Press", "Your name"]


@pytest.mark.parametrize(
    "args,env,message",
    [
        (["observe", "nowhere.toml", "--out", "x"], {}, "nowhere.toml: no such site config file"),
        (["observe", "http://127.0.0.1:9/", "--out", "x"], {}, "cannot reach http://127.0.0.1:9/"),
        (["observe", "http://127.0.0.1:9/", "--out", "x"], {"SCALEHOP_CHROMIUM": "/nope/chrome"}, "Chromium not found"),
    ],
)
def test_user_errors_are_one_line(args, env, message, tmp_path):
    result = scalehop(*args, env=env)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


DOWN = "http://127.0.0.1:9/"


@pytest.mark.parametrize(
    "args",
    [
        ["explore", DOWN, "--strategy", "random", "--steps", "2", "--runs-dir", "{runs}"],
        ["improve", DOWN, "--strategy", "random", "--steps", "2", "--runs-dir", "{runs}"],
        ["eval", "bundled:shop:dev", "--site", f"shop={DOWN}", "--policy", "random", "--limit", "2", "--out", "{runs}"],
    ],
    ids=["explore", "improve", "eval"],
)
def test_an_unreachable_start_fails_in_one_line_and_leaves_no_run(args, tmp_path):
    """A start URL nothing answers: each command says so in one line, exits 2, and writes no empty run folder (an
    evaluation does not grade its tasks as failed on a site that is down)."""
    runs = tmp_path / "runs"
    result = scalehop(*[a.replace("{runs}", str(runs)) for a in args])
    assert result.returncode == 2, result.stderr
    assert f"cannot reach {DOWN.rstrip('/')}" in result.stderr and "Traceback" not in result.stderr
    assert not runs.exists() or not any(runs.iterdir())
