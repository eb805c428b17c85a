"""The dataset stage on a real short SCALE run (embedded model) of the bundled shop: three task types, both
generators, the gates (scrub, format, dedup, replay in a fresh browser), and the export reloaded in a new process.

The shop's title is edited before exploring so that its pages carry a planted secret, e-mail and phone number:
the dataset must keep none of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.browser import Chromium
from explorer.config import BrowserConfig, ExploreConfig, LoginStep, SiteConfig
from explorer.errors import ConfigError
from explorer.models import ModelConfig, load_model
from explorer.run import run_exploration
from explorer.store import resume
from flows.cli import main as scalehop
from sites import serve_sites
from sites.content import build_shop
from synthesis.build import build_dataset
from synthesis.export import PushError
from synthesis.gates import check_format, dedup
from synthesis.multi_step import build_multi_step
from synthesis.page_qa import build_page_qa
from synthesis.recipe import DatasetRecipe, Gates, load_recipe
from synthesis.replay import replay_task
from synthesis.scrub import Scrubber, site_secrets
from synthesis.source import open_run
from synthesis.stats import DatasetStats

ROOT = Path(__file__).resolve().parents[1]
SECRET_ENV = "SCALEHOP_TEST_SHOP_TOKEN"
SECRET = "tok-9f3kq2zx"
EMAIL = "help.desk@northwind.example"
PHONE = "+1 415-555-0134"
PLANTED = (SECRET, EMAIL, PHONE)
# The module's exploration runs the embedded model: about a minute on a quiet 2-core machine, several on a busy one.
pytestmark = pytest.mark.timeout(600)
BOUNDED = {"max_path": 3, "limit": 6}  # replay costs ~2 s a task: keep the module's build small


@pytest.fixture(scope="module")
def shop():
    """The bundled sites (our own servers: the test edits the shop's state), and the shop's site object."""
    servers = serve_sites(port=0, slow_seconds=30)
    site = servers.sites["shop"]
    site.title = f"Northwind Outfitters · {EMAIL} · {PHONE} · {SECRET}"
    yield servers.urls["shop"], site
    servers.stop()


@pytest.fixture(scope="module")
def shop_config(shop) -> SiteConfig:
    url, _ = shop
    # a login step that references the secret (as a real login would): its value is a secret to scrub
    login = [LoginStep(action="wait_for", selector="body", value="${" + SECRET_ENV + "}")]
    timeouts = {"navigation_ms": 4000, "action_ms": 3000}
    return SiteConfig(name="shop", start_url=url, reset_url=url + "__reset", timeouts=timeouts, login=login)


@pytest.fixture(scope="module")
async def run_dir(shop_config, tmp_path_factory) -> Path:
    os.environ[SECRET_ENV] = SECRET
    runs = tmp_path_factory.mktemp("runs")
    cfg = ExploreConfig(max_steps=10, steps_per_hop=4, stall_steps=2, verify_actions=1, memory=False, seed=0)
    await run_exploration(shop_config, cfg, BrowserConfig(), runs_dir=runs, run_id="shop-scale")
    return runs / "shop-scale"


@pytest.fixture(scope="module")
def built(run_dir):
    return build_dataset([run_dir], load_recipe("default", **BOUNDED))


@pytest.fixture(scope="module")
def reloaded(built, tmp_path_factory) -> dict:
    """Load the export in a new process, from save_to_disk and from parquet; decode every image there."""
    code = r"""
import json, sys
from datasets import load_dataset, load_from_disk
out, cache = sys.argv[1], sys.argv[2]
def summary(ds):
    rows = []
    for row in ds:
        images = [row[k] for k in ("screenshot", "som_screenshot", "goal_image") if k in row]
        images += row.get("images", [])
        for im in images:
            im.load()
        text = {k: v for k, v in row.items() if k not in ("screenshot", "som_screenshot", "goal_image", "images")}
        rows.append({"row": text, "sizes": [list(im.size) for im in images]})
    return rows
disk = load_from_disk(out + "/hf")
result = {"disk": {s: summary(disk[s]) for s in disk}, "parquet": {}}
for s in disk:
    pq = load_dataset("parquet", data_files=f"{out}/parquet/{s}.parquet", split="train", cache_dir=cache)
    result["parquet"][s] = summary(pq)
print(json.dumps(result))
"""
    cache = tmp_path_factory.mktemp("hf-cache")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(built.out), str(cache)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_all_three_task_types_are_built_with_the_output_layout(built, run_dir):
    assert built.out == run_dir / "dataset"
    for name in ("hf/dataset_dict.json", "README.md", "stats.json"):
        assert (built.out / name).is_file()
    assert DatasetStats.load(built.out) == built.stats
    stats = json.loads((built.out / "stats.json").read_text())
    assert stats == built.stats.model_dump(mode="json") and stats["schema"] == 1 and stats["schema_version"] == 1
    for task_type in ("single_step", "multi_step", "page_qa"):
        assert (built.out / "parquet" / f"{task_type}.parquet").is_file()
        assert stats["counts"][task_type] >= 1, (task_type, stats["counts"], stats["skipped"], stats["drops"])
        assert stats["by_site"]["shop"][task_type] == stats["counts"][task_type]
    assert stats["generator"] == "template" and stats["model"] is None
    card = (built.out / "README.md").read_text()
    assert "shop-scale" in card and f"| page_qa | {stats['counts']['page_qa']} |" in card


def test_information_seeking_tasks_ask_what_their_goal_page_states(built, reloaded):
    """Reverse construction asks, at the end of a kept navigation task's path, for a fact its goal page states
    (synthesis.answers): the same actions as that task, an answer among the goal page's text blocks the Actor reads
    and on no page before, and a chat view that ends with it."""
    rows = [r["row"] for s in ("single_step", "multi_step") for r in reloaded["disk"][s]]
    asked = [r for r in rows if r["answer"]]
    assert asked and len(asked) < len(rows), [r["instruction"] for r in rows]
    for row in asked:
        assert row["instruction"].endswith("?") and any(row["answer"] in t for t in row["goal_page_texts"]), row
        before = [row["page_texts"]] if row["task_type"] == "single_step" else [s["page_texts"] for s in row["steps"]]
        assert not any(row["answer"] in t for texts in before for t in texts), row
        actions = row.get("action") or [s["action"] for s in row["steps"]]
        parents = [r for r in rows if not r["answer"] and (r.get("action") or [s["action"] for s in r["steps"]])]
        assert any((r.get("action") or [s["action"] for s in r["steps"]]) == actions for r in parents), row
        assert row["messages"][-1]["content"].endswith(f'stop and answer "{row["answer"]}"')
    assert sum(built.stats.drafts.values()) + len(asked) >= sum(built.counts.values())  # drafts: the builders' own


def test_reloaded_in_a_new_process_with_images(built, reloaded):
    for task_type, n in built.counts.items():
        disk, parquet = reloaded["disk"][task_type], reloaded["parquet"][task_type]
        assert len(disk) == len(parquet) == n
        assert [r["row"]["id"] for r in disk] == [r["row"]["id"] for r in parquet]
        for entry in disk + parquet:
            assert entry["sizes"] and all(size == [1280, 800] for size in entry["sizes"])  # decoded PNGs
            row = entry["row"]
            assert row["task_type"] == task_type and row["generator"] == "template" and row["fallback"] is False
            assert row["messages"][0]["role"] == "system" and row["messages"][-1]["role"] == "assistant"
    for entry in reloaded["disk"]["multi_step"]:
        assert len(entry["sizes"]) == entry["row"]["num_steps"] + 1  # one per step, plus the goal
        goal = entry["row"]["goal_observation_text"].splitlines()[0]  # the goal page, where the Actor learns to stop
        assert goal.startswith("Page: ") and entry["row"]["goal_title"] in goal
    for entry in reloaded["disk"]["single_step"]:
        assert entry["row"]["goal_observation_text"].startswith("Page: ")  # the page the action reached


def test_lineage_resolves_to_store_rows(reloaded, run_dir):
    store, graph = resume(run_dir)
    try:
        for task_type, entries in reloaded["disk"].items():
            for entry in entries:
                row, lineage = entry["row"], entry["row"]["lineage"]
                assert lineage["run_id"] == "shop-scale" and lineage["model_id"] == "smollm2-135m"
                assert all(node in graph.g for node in lineage["node_ids"])
                if task_type == "single_step":
                    (record,) = [r for r in store.records() if r.id == lineage["record_id"]]
                    assert record.kind == "failure" and [record.node_from, record.node_to] == lineage["node_ids"]
                    assert record.payload["action"]["element_key"] == row["action"]["element_key"]
                    assert record.step == lineage["step"]
                if task_type == "multi_step":
                    nodes = lineage["node_ids"]
                    assert len(nodes) == row["num_steps"] + 1
                    for i, step in enumerate(row["steps"]):
                        assert step["node_id"] == nodes[i]
                        # an explored edge, or a shown link that skips a detour (synthesis.multi_step.shortcut:
                        # a click on a link to a URL-addressable page, which the replay gate checked)
                        inferred = step["action"]["kind"] == "click" and graph.node(nodes[i + 1]).addressable
                        assert graph.g.has_edge(nodes[i], nodes[i + 1]) or inferred is not False
    finally:
        store.close()


def test_planted_secret_email_and_phone_are_scrubbed(built, reloaded, run_dir):
    store, _ = resume(run_dir)
    try:
        raw = json.dumps([row.payload for row in store.records()])
    finally:
        store.close()
    # the run holds the e-mail and the phone; the secret was redacted from every observation at capture
    assert EMAIL in raw and SECRET not in raw and "[SECRET]" in raw
    stored = [p.read_bytes() for p in (run_dir / "blobs").rglob("*.json")]
    assert stored and not any(SECRET.encode() in blob for blob in stored)
    assert all(built.stats.gates.scrub[k] > 0 for k in ("email", "phone")), built.stats.gates
    text = json.dumps(reloaded)
    for planted in PLANTED:
        assert planted not in text
    assert "[EMAIL]" in text and "[PHONE]" in text and "[SECRET]" in text


def test_scrubber_on_every_text_field(run_dir, shop_config):
    source = open_run(run_dir)
    try:
        task = build_page_qa(source, DatasetRecipe())[0]
        planted = task.model_copy(update={"answer": f"mail {EMAIL} or call (415) 555-0134, token {SECRET}"})
        scrubber = Scrubber(site_secrets(shop_config))
        clean = scrubber.task(planted)
    finally:
        source.close()
    assert clean.answer == "mail [EMAIL] or call [PHONE], token [SECRET]"
    assert clean.id == task.id and clean.screenshot == task.screenshot and clean.lineage == task.lineage
    assert scrubber.counts["email"] >= 1 and scrubber.counts["phone"] >= 1 and scrubber.counts["secret"] >= 1
    assert scrubber.text("price $129.00, item 123456789, 2026-12-02") == "price $129.00, item 123456789, 2026-12-02"


def test_every_kept_multi_step_task_replayed_to_its_target(built, reloaded):
    replay = built.stats.gates.replay
    assert replay.enabled and replay.checked == replay.passed + replay.dropped
    plain = [e for e in reloaded["disk"]["multi_step"] if not e["row"]["answer"]]
    assert replay.passed == len(plain) >= 1  # an information-seeking row reuses a replayed path: not replayed again
    delta = 0.999
    for entry in reloaded["disk"]["multi_step"]:
        assert entry["row"]["replay_ssim"] >= delta - 1e-6  # float32 column
    for drop in (d for d in built.drops if d.gate == "replay"):
        assert drop.reason


async def test_a_task_made_invalid_by_editing_the_site_is_dropped(reloaded, run_dir, shop):
    _, site = shop
    source = open_run(run_dir)
    kept = {entry["row"]["id"] for entry in reloaded["disk"]["multi_step"]}
    task = next(t for t in build_multi_step(source, DatasetRecipe(**BOUNDED)) if t.id in kept)
    original = site.data, site.cats
    chromium = await Chromium.launch(BrowserConfig(), source.site.allowed_origins)
    try:
        edited = build_shop(seed=7)  # other products, prices and pictures: the recorded pages no longer exist
        site.data, site.cats = edited, {c["slug"]: c for c in edited.categories}
        broken = await replay_task(chromium, source.site, task, source.lookup, source.delta)
        site.data, site.cats = original
        again = await replay_task(chromium, source.site, task, source.lookup, source.delta)
    finally:
        site.data, site.cats = original
        await chromium.close()
        source.close()
    assert not broken.ok and broken.reason, broken
    assert any(word in broken.reason for word in ("SSIM", "not on the page", "failed", " is at ", "controls")), broken
    assert broken.cause in ("pixels", "element missing", "action failed", "url", "structure")
    assert again.ok and again.ssim >= source.delta  # the same task, on the restored site, reaches its target


def test_model_generator_rows_say_so(run_dir, tmp_path):
    model = load_model(ModelConfig())
    recipe = load_recipe("model", limit=2, gates=Gates(replay=False))
    result = build_dataset([run_dir], recipe, tmp_path / "model", model=model)
    template = build_dataset([run_dir], load_recipe("quick", limit=2), tmp_path / "template")
    assert result.stats.generator == "model" and result.stats.model == "smollm2-135m"
    assert model.usage_report()["synthesis"]["calls"] >= sum(result.stats.drafts.values())
    from datasets import load_from_disk

    ds, base = load_from_disk(str(result.out / "hf")), load_from_disk(str(template.out / "hf"))
    fallbacks = 0
    for split in ds:
        by_id = {row["id"]: row for row in base[split]}
        for row in ds[split]:
            assert row["generator"] == "model"
            fallbacks += row["fallback"]
            text = "question" if split == "page_qa" else "instruction"
            if row["id"] in by_id and row[text] != by_id[row["id"]][text]:
                assert row[text].strip() and len(row[text].split()) >= 3  # a parsed model answer
    assert result.stats.fallbacks == fallbacks


def test_format_and_dedup_gates_report_reasons(run_dir):
    source = open_run(run_dir)
    try:
        tasks = build_page_qa(source, DatasetRecipe())
    finally:
        source.close()
    gates = Gates(min_words=3, max_words=12)
    short = tasks[0].model_copy(update={"id": "short", "question": "Title?"})
    twin = tasks[0].model_copy(update={"id": "twin", "question": tasks[0].question.replace("?", " ?")})
    _, before = check_format(tasks, gates)  # what the run's own questions fail (a long title can)
    kept, drops = check_format([*tasks, short], gates)
    assert [d.id for d in drops] == [*(d.id for d in before), "short"] and "fewer than 3" in drops[-1].reason
    kept, drops = dedup([*kept, twin], gates)
    assert "twin" in [d.id for d in drops] and all(d.reason.startswith("near-identical to") for d in drops)
    assert "twin" not in [t.id for t in kept]


def test_cli_build_and_stats(run_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    assert scalehop(["dataset", "build", str(run_dir), "--recipe", "quick", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == str(out) and (out / "stats.json").is_file()
    assert scalehop(["dataset", "stats", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"] == "quick"
    assert scalehop(["dataset", "stats", str(tmp_path / "nothing")]) == 2
    assert "no stats.json" in capsys.readouterr().err


def test_push_to_hub_failure_keeps_the_dataset_on_disk(run_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "pushed"
    with pytest.raises(PushError, match="owner/scalehop-test") as err:
        build_dataset([run_dir], load_recipe("quick", push_to_hub="owner/scalehop-test"), out)
    assert str(out) in str(err.value) and (out / "stats.json").is_file() and (out / "hf").is_dir()


def test_bad_recipe_names_the_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('generator = "gpt"\n')
    with pytest.raises(ConfigError, match="generator"):
        load_recipe(bad)
    with pytest.raises(ConfigError, match="min_path"):
        load_recipe(None, min_path=5, max_path=2)
