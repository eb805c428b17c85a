"""`scalehop improve --backend openai`: a whole round against `scalehop serve-model`, the stand-in here for vLLM on a
GPU box (the same OpenAI-compatible API and runtime LoRA API, serving the embedded model on CPU)."""

from __future__ import annotations

import json

from evals.results import EvalRun
from flows.cli import main as cli_main
from tests.serving import bare_server, running, served
from training.state import ImproveState


def test_improve_runs_a_round_through_serve_model_and_hot_loads_its_adapter(site_urls, tmp_path, capsys):
    """Exploration and the dev-task evaluation go through the server; training runs here (peft) on the same
    weights; the round's adapter is hot-loaded into the server (POST /v1/load_lora_adapter) for the evaluation."""
    shop = site_urls["shop"]
    site = tmp_path / "shop.toml"
    site.write_text(
        f'name = "shop"\nstart_url = "{shop}"\nreset_url = "{shop}__reset"\n'
        "[timeouts]\nnavigation_ms = 4000\naction_ms = 3000\n"
    )
    train = tmp_path / "train.toml"
    train.write_text('views = ["actor", "predictor"]\nmax_steps = 2\nbatch_size = 2\nrank = 4\nalpha = 8\n')
    server = bare_server()
    with running(server) as base_url:
        model = server.config.app.state.model  # the served LocalModel
        argv = ["improve", str(site), "--backend", "openai", "--base-url", base_url, "--model", "smollm2-135m"]
        argv += ["--steps", "2", "--steps-per-hop", "2", "--verify-actions", "1", "--heldout-share", "0"]
        argv += ["--dev-limit", "1", "--dev-max-steps", "1", "--train-config", str(train)]
        argv += ["--runs-dir", str(tmp_path / "runs"), "--run-id", "served", "--json"]
        assert cli_main(argv) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        cards = served(base_url)
        calls = model.usage_report()["total"]["calls"]
    root = tmp_path / "runs" / "served"
    (only,) = ImproveState.load(root).rounds
    assert summary["rounds"][0]["round"] == 1 and only.adapter == "adapters/round-1"
    assert only.transitions > 0 and only.train_examples > 0
    # the adapter trained here was hot-loaded: the server lists it under its digest name, loaded from that folder
    (lora,) = [name for name in cards if name.startswith("round-1-")]
    assert cards[lora]["root"] == str((root / "adapters" / "round-1").resolve()) and lora in model.adapters
    # no page held out (the held-out Predictor is tested locally): the paired dev tasks alone evaluate, through
    # the server, the base model before and the round's adapter after; only they load the adapter into the server
    assert only.heldout == 0 and only.after is None
    assert only.tasks is not None and only.tasks.n == 1
    after = EvalRun.load(root / "evals" / "round-1" / "after" / "bundled-shop-dev")
    assert after.adapter == str(root / "adapters" / "round-1") and after.model == "smollm2-135m"
    assert calls > 0  # every model call of the round (exploration, evaluation) was the server's
