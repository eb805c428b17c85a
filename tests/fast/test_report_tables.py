"""The report's pure parts: side tables of an improve run's improve.json and adapter card and of a dataset's
stats.json (report.tables), where the runs are (report.html.find_runs), and the graph layout (report.html.layout).
Rendering the page in Chromium is tests/test_report.py's."""

from __future__ import annotations

import logging
import shutil
from collections import Counter

import pytest

from explorer.config import ExploreConfig
from explorer.graph import ExplorationGraph
from explorer.store import resume
from report.html import LAYOUT, ReportError, build_report, find_runs, layout
from report.tables import side_tables
from synthesis.page_qa import build_page_qa
from synthesis.recipe import DatasetRecipe
from synthesis.single_step import build_single_step
from synthesis.source import open_run
from synthesis.stats import dataset_stats
from training.adapters import AdapterCard, write_card
from training.config import TrainConfig
from training.evaluate import EvalReport
from training.state import ImproveState, RoundResult

PAD = 30.0  # report.html.layout's margin inside the LAYOUT box


def accuracy(adapter: str | None, correct: int) -> EvalReport:
    """A held-out evaluation on 11 transitions."""
    return EvalReport(
        adapter=adapter, predictor_accuracy=round(correct / 11, 2), predictor_correct=correct, predictor_total=11
    )


def improve_round(k: int, before: int, after: int, adopted: bool, reason: str) -> RoundResult:
    """Round k of an improve run: the base model gets none of 11 held-out transitions right."""
    return RoundResult(
        round=k,
        explored_with=None if k == 1 else "adapters/round-1",
        explore_runs=[f"explore/round-{k}/tinyshop"],
        failures=50,
        transitions=51,
        train_examples=40 * k,
        heldout=11,
        floor=None,
        base=accuracy(None, 0),
        before=accuracy(None if k == 1 else "adapters/round-1", before),
        after=accuracy(f"adapters/round-{k}", after),
        adopted=adopted,
        reason=reason,
        adapter=f"adapters/round-{k}",
        train={"loss_first": 2.5, "loss_last": 0.8},
        seconds=520.0,
    )


@pytest.fixture
def report_root(tmp_path, fixture_run):
    """A folder with an improve run (improve.json, round 1's adapter card), a dataset built from the fixture run
    (stats.json) and an unreadable stats.json."""
    improve = tmp_path / "improve"
    rounds = [improve_round(1, 0, 3, True, "above the floor"), improve_round(2, 3, 2, False, "regression")]
    ImproveState(
        improve_id="imp-1",
        base_model="smollm2-135m",
        sites=["configs/shop.toml"],
        heldout_share=0.3,
        train_config=TrainConfig(),
        explore_config=ExploreConfig(),
        rounds=rounds,
    ).save(improve)
    card = AdapterCard(
        round=1,
        base_model="smollm2-135m",
        parent_round=None,
        data_hash="ab12",
        counts={"train_examples": 40, "failures": 50, "heldout": 11},
        metrics={},
        adopted=True,
        reason="above the floor",
    )
    (improve / "adapters" / "round-1").mkdir(parents=True)
    write_card(improve / "adapters" / "round-1", card)
    source, recipe, skipped = open_run(fixture_run.dir), DatasetRecipe(), Counter()
    tasks = build_single_step(source, recipe, skipped) + build_page_qa(source, recipe)
    drafts = Counter(t.task_type for t in tasks)
    stats = dataset_stats([source], recipe, tasks, drafts, skipped, [], Counter(), Counter(), 0, None)
    stats.save(tmp_path / "dataset")
    source.close()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "stats.json").write_text("{not json")
    return tmp_path


def table(tables, title: str) -> list[dict[str, str]]:
    """The rows of the table titled `title`, each as {column: cell}."""
    found = next(t for t in tables if t.title == title)
    return [dict(zip(found.columns, row, strict=True)) for row in found.rows]


def test_improve_rounds_become_a_table_and_the_accuracy_chart(report_root):
    side = side_tables(report_root)
    rounds = table(side.rounds, "improve/improve.json: rounds")
    assert [(r["round"], r["base accuracy"], r["after accuracy"], r["adopted"]) for r in rounds] == [
        ("1", "0", "0.27", "yes"),
        ("2", "0", "0.18", "no"),
    ]
    assert [r["explored with"] for r in rounds] == ["—", "adapters/round-1"]
    assert rounds[1]["reason"] == "regression" and rounds[0]["loss last"] == "0.8"
    assert "after surprise" not in rounds[0]  # no round has a value there: no column
    settings = {r["field"]: r["value"] for r in table(side.rounds, "improve/improve.json")}
    assert settings["improve_id"] == "imp-1" and settings["heldout_share"] == "0.3"
    assert side.accuracy == {
        "title": "improve/improve.json",
        "rounds": [1, 2],
        "series": [
            {"name": "base", "values": [0.0, 0.0]},
            {"name": "before", "values": [0.0, 0.27]},
            {"name": "after", "values": [0.27, 0.18]},
        ],
    }
    [card] = table(side.rounds, "adapter cards")
    assert (card["adapter"], card["round"], card["parent round"], card["train examples"]) == (
        "improve/adapters/round-1",
        "1",
        "—",
        "40",
    )


def test_dataset_stats_become_rows_per_site_and_an_unreadable_file_a_note(report_root):
    side = side_tables(report_root)
    per_site = table(side.datasets, "dataset: rows per site and task type")
    assert per_site == [
        {"site": "tinyshop", "single_step": "4", "multi_step": "0", "page_qa": "22"},
        {"site": "all sites", "single_step": "4", "multi_step": "0", "page_qa": "22"},
    ]
    assert [note.split(" (")[0] for note in side.notes] == ["broken/stats.json could not be read"]


def test_find_runs_lists_every_run_folder_below_the_root(tmp_path, fixture_run):
    assert find_runs(fixture_run.dir.parent) == [fixture_run.dir]
    assert find_runs(fixture_run.dir) == [fixture_run.dir]
    for rel in ("b/run-2", "a/run-1", "a/deeper/run-3"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "run.sqlite").touch()
    assert find_runs(tmp_path) == [tmp_path / "a/deeper/run-3", tmp_path / "a/run-1", tmp_path / "b/run-2"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="holds no run"):
        find_runs(tmp_path / "empty")
    with pytest.raises(ReportError, match="no such folder"):
        find_runs(tmp_path / "missing")


def test_layout_fills_the_box_with_every_node_the_same_way_each_time(fixture_run):
    store, graph = resume(fixture_run.dir)
    store.close()
    pos = layout(graph)
    assert list(pos) == [n.id for n in graph.nodes()]
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    assert (min(xs), max(xs)) == pytest.approx((PAD, LAYOUT[0] - PAD))
    assert (min(ys), max(ys)) == pytest.approx((PAD, LAYOUT[1] - PAD))
    assert len(set(pos.values())) == len(pos)  # no two nodes on one spot
    assert layout(graph) == pos  # seeded


def test_layout_of_one_node_is_the_centre(fixture_run):
    store, graph = resume(fixture_run.dir)
    one = ExplorationGraph()
    one.add_node(graph.nodes()[0])
    store.close()
    assert layout(one) == {"n0": (LAYOUT[0] / 2, LAYOUT[1] / 2)}
    assert layout(ExplorationGraph()) == {}


def test_report_skips_a_run_folder_it_cannot_open_and_still_writes_the_page(tmp_path, fixture_run, caplog):
    """A stray empty run.sqlite (as once under a run's blobs/) stopped `scalehop report`; it is skipped, with a
    one-line warning, and named on the page."""
    root = tmp_path / "runs"
    shutil.copytree(fixture_run.dir, root / "good")
    (root / "good" / "blobs" / "run.sqlite").touch()  # an empty file: not a run store
    with caplog.at_level(logging.WARNING, logger="report.html"):
        page = build_report(root)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "good/blobs" in warning.getMessage() and "\n" not in warning.getMessage()
    html = page.read_text()
    assert "skipped good/blobs" in html and fixture_run.site.name in html
    (root / "good" / "run.sqlite").write_bytes(b"not a database")  # no readable run left: a clear error
    with pytest.raises(ReportError, match="no readable run"):
        build_report(root)
