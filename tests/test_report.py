"""`scalehop report` from real short runs (two baselines and a tiny SCALE run), opened in real Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.run import run_exploration
from explorer.store import resume
from report import IMAGE_WIDTH, build_report
from synthesis.stats import DatasetStats, Dropped, GateStats, ReplayStats
from training.config import TrainConfig
from training.evaluate import EvalReport
from training.improve import new_state
from training.state import RoundResult

ROOT = Path(__file__).resolve().parents[1]
# run folder (relative to the report root) -> (site, strategy, steps)
RUNS = {"shop/random": ("shop", "random", 10), "classifieds/greedy": ("classifieds", "greedy", 10)}
RUNS |= {"forum/scale": ("forum", "scale", 3)}


@pytest.fixture(scope="module")
async def runs_root(site_config, tmp_path_factory) -> Path:
    """A folder of three real runs, one folder level deeper than the report root."""
    root = tmp_path_factory.mktemp("report") / "runs"
    for rel, (site, strategy, steps) in RUNS.items():
        cfg = ExploreConfig(strategy=strategy, max_steps=steps, steps_per_hop=4, stall_steps=2, verify_actions=1)
        folder = root / rel
        await run_exploration(site_config(site), cfg, BrowserConfig(), runs_dir=folder.parent, run_id=folder.name)
    return root


async def open_page(chromium, html: Path):
    """The report in a fresh page; with the console errors, page errors and requests it caused."""
    context = await chromium.browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    seen = {"errors": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
    page.on("request", lambda r: seen["requests"].append(r.url))
    await page.goto(html.as_uri())
    await page.wait_for_selector("#graph-svg circle.node")
    return context, page, seen


@pytest.fixture(scope="module")
async def report(runs_root, chromium):
    html = build_report(runs_root)
    context, page, seen = await open_page(chromium, html)
    yield html, page, seen
    await context.close()


def store_numbers(run_dir: Path) -> dict:
    store, graph = resume(run_dir)
    try:
        numbers = {
            "steps": store.last_step() + 1,
            "states": store.count("nodes"),
            "failures": store.count_records("failure"),
            "nodes": {n.id: n for n in graph.nodes()},
            "records": {r.id: r.record for r in store.records("failure")},
        }
    finally:
        store.close()
    return numbers


async def test_report_renders_offline_without_errors(report, runs_root):
    html, page, seen = report
    assert html == runs_root / "report.html"
    assert seen["errors"] == []
    assert seen["requests"] == [html.as_uri()], "the page must load nothing else"
    text = html.read_text()
    assert 'src="http' not in text and 'href="http' not in text
    assert await page.locator("#summary tbody tr").count() == len(RUNS)


async def test_summary_and_curves_match_the_store(report, runs_root):
    _, page, _ = report
    for rel in RUNS:
        truth = store_numbers(runs_root / rel)
        row = page.locator(f'#summary tr[data-label="{rel}"]')
        for field in ("steps", "states", "failures"):
            assert int(await row.get_attribute(f"data-{field}")) == truth[field], (rel, field)
        key = await row.get_attribute("data-run")
        assert (
            int(await page.locator(f'#curves-legend [data-run="{key}"]').get_attribute("data-final")) == truth["states"]
        )
        await page.click('#curve-metrics button[data-metric="failures"]')
        assert (
            int(await page.locator(f'#curves-legend [data-run="{key}"]').get_attribute("data-final"))
            == truth["failures"]
        )
        await page.click('#curve-metrics button[data-metric="states"]')
    assert await page.locator("#curves-svg polyline").count() == len(RUNS)


async def test_model_calls_and_time_by_part_show_per_run(report, runs_root):
    """The SCALE run's roles (calls, answers under the grammar, repairs, fallbacks) as its store's meta has them;
    a baseline shows no model but its seconds by part."""
    from explorer.store import RunStore

    _, page, _ = report
    store = RunStore(runs_root / "forum/scale")
    try:
        meta = store.meta()
    finally:
        store.close()
    key = await page.locator('#summary tr[data-label="forum/scale"]').get_attribute("data-run")
    for role, counts in meta.roles.items():
        cells = await page.locator(f'#roles tr[data-run="{key}"][data-role="{role}"] td').all_inner_texts()
        assert cells[2:6] == [str(int(counts[k])) for k in ("calls", "constrained", "repairs", "fallbacks")]
    assert {"selector", "predictor"} <= set(meta.roles)
    baseline = await page.locator('#summary tr[data-label="shop/random"]').get_attribute("data-run")
    row = await page.locator(f'#roles tr[data-run="{baseline}"] td').all_inner_texts()
    assert row[1] == "— (no model)" and "store:" in row[-1]


async def test_graph_has_every_node_and_hover_shows_its_screenshot(report, runs_root):
    _, page, _ = report
    for rel in RUNS:
        nodes = store_numbers(runs_root / rel)["nodes"]
        key = await page.locator(f'#summary tr[data-label="{rel}"]').get_attribute("data-run")
        await page.select_option("#graph-run", key)
        circles = page.locator("#graph-svg circle.node")
        drawn = {await c.get_attribute("data-node"): await c.get_attribute("data-status") for c in await circles.all()}
        assert drawn == {n.id: n.status for n in nodes.values()}, rel
    last = nodes[list(nodes)[-1]]
    await page.locator(f'#graph-svg circle[data-node="{last.id}"]').hover()
    tooltip = page.locator("#tooltip")
    assert await tooltip.is_visible()
    image = tooltip.locator("img")
    assert await image.get_attribute("data-shot") == last.screenshot
    assert await image.evaluate("img => img.complete && img.naturalWidth") == IMAGE_WIDTH
    assert last.url in await tooltip.inner_text()
    await page.locator(f'#graph-svg circle[data-node="{last.id}"]').click()
    assert last.url in await page.locator("#graph-details").inner_text()


async def test_failure_gallery_shows_each_sample(report, runs_root):
    _, page, _ = report
    records = store_numbers(runs_root / "forum/scale")["records"]
    assert records, "the base model should mispredict something in 2 steps"
    key = await page.locator('#summary tr[data-label="forum/scale"]').get_attribute("data-run")
    figures = page.locator(f'.gallery[data-run="{key}"] figure.failure')
    assert await figures.count() == len(records)
    for figure in await figures.all():
        record = records[await figure.get_attribute("data-record")]
        assert await figure.locator("dd.action").inner_text() == record.action.describe()
        assert await figure.locator("dd.truth").inner_text() == record.transition.description
        assert (await figure.locator("dd.verdict").inner_text()).startswith("wrong")
        assert await figure.locator("img").evaluate("img => img.complete && img.naturalWidth") == IMAGE_WIDTH
    for rel in ("shop/random", "classifieds/greedy"):
        key = await page.locator(f'#summary tr[data-label="{rel}"]').get_attribute("data-run")
        assert await page.locator(f'.gallery[data-run="{key}"] figure').count() == 0
    assert "Not a self-improvement run" in await page.locator("#rounds").inner_text()
    assert "No dataset built here" in await page.locator("#dataset").inner_text()


def write_side_files(improve: Path) -> None:
    """improve.json, an adapter card and a dataset's stats.json, written by the typed artifacts of training/ and
    synthesis/."""
    base = EvalReport(adapter=None, predictor_accuracy=0.125, predictor_correct=1, predictor_total=8)
    after = EvalReport(adapter="adapters/round-1", predictor_accuracy=0.625, predictor_correct=5, predictor_total=8)
    round_1 = RoundResult(
        round=1,
        explored_with=None,
        explore_runs=["explore/round-1/shop"],
        failures=7,
        transitions=9,
        train_examples=7,
        heldout=8,
        floor=None,
        base=base,
        before=base,
        after=after,
        adopted=True,
        reason="gain",
        adapter="adapters/round-1",
        train={"loss_first": 2.5, "loss_last": 0.75, "losses": [2.5, 1.0, 0.75]},
        seconds=12.0,
    )
    shop = SiteConfig(name="shop", start_url="http://shop.test/")
    state = new_state([shop], improve, ExploreConfig(), TrainConfig(), heldout_share=0.3)
    state.rounds.append(round_1)
    state.save(improve)
    card = {
        "round": 1,
        "base_model": "smollm2-135m",
        "parent_round": None,
        "data_hash": "ab12",
        "adopted": True,
        "counts": {"train_examples": 7},
        "metrics": {"before": base.model_dump(), "after": after.model_dump()},
        "reason": "gain",
    }
    (improve / "adapters/round-1").mkdir(parents=True)
    (improve / "adapters/round-1/card.json").write_text(json.dumps(card))
    replay = ReplayStats(enabled=True, checked=4, passed=3, dropped=1, pass_rate=0.75)
    DatasetStats(
        recipe="default",
        generator="template",
        model=None,
        runs=[],
        counts={"single_step": 30, "page_qa": 12},
        by_site={"shop": {"single_step": 30, "page_qa": 12}},
        drafts={"single_step": 31, "page_qa": 12},
        skipped={},
        fallbacks=0,
        gates=GateStats(format=Dropped(), dedup=Dropped(dropped=1), replay=replay, scrub={}),
        drops=[],
    ).save(improve / "dataset")


async def test_rounds_and_dataset_sections_read_their_files(runs_root, chromium, tmp_path):
    improve = tmp_path / "improve"
    shutil.copytree(runs_root / "shop/random", improve / "explore/round-1/shop")
    write_side_files(improve)
    (improve / "explore/round-1/shop/improve.json").write_text("{not json")
    html = build_report(improve, tmp_path / "out/page.html")
    context, page, seen = await open_page(chromium, html)
    try:
        assert seen["errors"] == []
        rounds = page.locator("#rounds")
        text = await rounds.inner_text()
        assert "after accuracy" in text and "0.625" in text and "adapters/round-1" in text and "ab12" in text
        bars = rounds.locator("#accuracy-svg rect")
        drawn = {
            (await d.get_attribute("data-series"), float(await d.get_attribute("data-value"))) for d in await bars.all()
        }
        assert drawn == {("base", 0.125), ("before", 0.125), ("after", 0.625)}
        dataset = page.locator("#dataset table").first
        assert await dataset.locator("tbody tr").first.inner_text() == "shop\t30\t12"
        assert "gates.replay.pass_rate" in await page.locator("#dataset").inner_text()
        assert "explore/round-1/shop/improve.json could not be read" in await page.locator("#runs").inner_text()
        assert await page.locator("#summary tbody tr").get_attribute("data-label") == "explore/round-1/shop"
    finally:
        await context.close()


def test_cli_writes_the_report_and_names_it_last(runs_root, tmp_path):
    out = tmp_path / "one.html"
    cmd = [sys.executable, "-m", "flows.cli", "report", str(runs_root / "shop/random"), "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(out) and out.stat().st_size > 0
    empty = subprocess.run(
        [sys.executable, "-m", "flows.cli", "report", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert empty.returncode == 2 and "holds no run" in empty.stderr and len(empty.stderr.strip().splitlines()) == 1
