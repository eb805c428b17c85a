"""Search probes (deep-web surfacing) on the bundled sites with real Chromium: the first steps of a run submit the
site's search field with words of its pages, on the run's budget; a resumed run makes only the probes it owes;
a site without a search field spends none; reverse construction turns the probes into search tasks."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from datasets import load_from_disk
from explorer.config import BrowserConfig, ExploreConfig
from explorer.run import run_exploration, stored_config
from explorer.store import RunStore
from synthesis.build import build_dataset
from synthesis.recipe import load_recipe


def _steps(run_dir):
    store = RunStore(run_dir)
    try:
        return store.steps()
    finally:
        store.close()


async def test_probes_search_with_page_words_first_and_resume_owes_only_the_rest(site_config, tmp_path):
    site = site_config("shop")
    cfg = ExploreConfig(strategy="random", max_steps=8, search_probes=3, seed=0)
    summary = await run_exploration(site, cfg, BrowserConfig(), runs_dir=tmp_path, run_id="p")
    steps = _steps(summary.run_dir)
    assert summary.steps == len(steps) == 8  # the probes are steps of the budget
    assert [s.kind for s in steps[:4]] == ["start", "probe", "probe", "probe"]
    assert "probe" not in [s.kind for s in steps[4:]]  # then the strategy's own steps
    probes = steps[1:4]
    words = [s.action.text for s in probes]
    assert len(set(words)) == 3 and all(w.isalpha() and w == w.lower() for w in words)
    for step, word in zip(probes, words, strict=True):
        assert step.action.kind == "type" and step.action.press_enter and "Search" in step.action.label
        after = urlsplit(step.outcome["url_after"])
        assert after.path == "/search" and parse_qs(after.query)["q"] == [word]  # the form was submitted
    assert len({s.node_to for s in probes}) == 3  # each query reached a state of its own

    more = cfg.model_copy(update={"max_steps": 12, "search_probes": 5})
    again = await run_exploration(site, more, BrowserConfig(), runs_dir=tmp_path, resume_run="p")
    resumed = _steps(again.run_dir)
    assert again.steps == 12 and resumed[:8] == steps
    new = [s for s in resumed[8:] if s.kind == "probe"]
    assert len(new) == 2 and not {s.action.text for s in new} & set(words)  # the two owed, with new words

    build_dataset([summary.run_dir], load_recipe("quick"), tmp_path / "dataset")
    multi = load_from_disk(str(tmp_path / "dataset" / "hf" / "multi_step"))
    asked = {i for i in multi["instruction"] if i.startswith("Search for")}
    assert {f'Search for "{w}".' for w in words + [s.action.text for s in new]} & asked  # search tasks from probes
    for row in multi:
        if row["instruction"].startswith("Search for"):
            last = row["steps"][-1]["action"]
            assert last["kind"] == "type" and f'"{last["text"]}"' in row["instruction"]


async def test_probes_that_spend_the_budget_leave_the_strategy_no_step(site_config, tmp_path):
    """With as many probes as the budget holds, the run is the start step and the probes: no worker adds its own
    start step past the budget. Resumed with a larger budget and no flags for the probes, the run keeps the
    settings its last resume gave it (here 6 probes)."""
    site = site_config("forum")
    cfg = ExploreConfig(strategy="greedy", max_steps=4, search_probes=3, seed=0)
    summary = await run_exploration(site, cfg, BrowserConfig(), runs_dir=tmp_path, run_id="f")
    assert summary.steps == 4 and [s.kind for s in _steps(summary.run_dir)] == ["start", "probe", "probe", "probe"]
    more = cfg.model_copy(update={"max_steps": 8, "search_probes": 6})
    await run_exploration(site, more, BrowserConfig(), runs_dir=tmp_path, resume_run="f")
    assert stored_config(tmp_path, "f") == more  # what a plain `--resume f` goes on with


async def test_a_site_without_a_search_field_spends_no_probe(site_config, tmp_path):
    """The classifieds site filters with menus and has no search field: no probe, and the strategy gets the
    budget (one start step more than without probes); resumed, the run does not look for the field again."""
    site, cfg = site_config("classifieds"), ExploreConfig(strategy="random", max_steps=4, search_probes=3, seed=0)
    summary = await run_exploration(site, cfg, BrowserConfig(), runs_dir=tmp_path, run_id="c")
    steps = _steps(summary.run_dir)
    assert summary.steps == 4 and "probe" not in [s.kind for s in steps]
    assert [s.kind for s in steps[:2]] == ["start", "start"]
    more = cfg.model_copy(update={"max_steps": 6})
    again = await run_exploration(site, more, BrowserConfig(), runs_dir=tmp_path, resume_run="c")
    resumed = _steps(again.run_dir)
    assert again.steps == 6 and [s.kind for s in resumed[4:]].count("start") == 1  # the walk's own start only
