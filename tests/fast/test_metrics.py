"""Run metrics (explorer.metrics) on the fixture run: the summary and the per-step curves, counted by hand from the
steps in tests/fast/conftest.py."""

from __future__ import annotations

import pytest

from explorer.metrics import alias_groups, step_curves, summarize
from explorer.store import resume


@pytest.fixture
def opened(fixture_run):
    """The fixture run's store and graph (closed after the test)."""
    store, graph = resume(fixture_run.dir)
    yield store, graph
    store.close()


def test_summary_counts_states_urls_aliases_failures_and_faults(opened, fixture_run):
    summary = summarize(*opened)
    assert (summary.run_id, summary.run_dir, summary.strategy) == ("fixture-run", str(fixture_run.dir), "scale")
    counts = {
        "steps": 10,  # every browser action, the start, the returns and the verification included
        "states": 6,
        "urls": 5,  # the size chart shares its URL with the home page
        "same_url_states": 1,
        "states_merged": 5,  # /c/jackets?sort=price looks like /c/jackets: an alias
        "elements_tried": 7,
        "element_coverage": 0.7,  # 7 of the 10 distinct elements seen
        "failures": 5,
        "records": 7,
        "unreachable": 0,
        "blocked_requests": 1,
        "tokens": 1234,
        "seconds": 12.5,
    }
    assert {k: getattr(summary, k) for k in counts} == counts
    assert summary.statuses == {"partial": 3, "unexplored": 2, "full": 1}  # the verified size chart is full
    assert summary.errors == {"timeout": 1}  # a blocked request is no error


def test_aliases_merge_only_same_path_look_alikes(opened):
    groups = alias_groups(*opened)
    assert groups == {"n0": "n0", "n1": "n1", "n2": "n2", "n3": "n1", "n4": "n4", "n5": "n5"}


def test_step_curves_are_cumulative_per_step(opened):
    assert step_curves(*opened) == {
        "states": [1, 2, 3, 3, 4, 4, 5, 5, 6, 6],
        "urls": [1, 2, 3, 3, 4, 4, 4, 4, 5, 5],
        "elements_tried": [0, 1, 2, 2, 3, 3, 4, 5, 6, 7],  # gotos try no element
        "failures": [0, 1, 1, 1, 2, 2, 3, 3, 4, 5],
    }
