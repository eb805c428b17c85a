"""Reverse construction without replay: single-step and page-QA drafts of the fixture run (synthesis.source,
synthesis.single_step, synthesis.page_qa with the template generator; the replay gate needs Chromium and is
tests/test_synthesis.py's)."""

from __future__ import annotations

from collections import Counter

import pytest

from synthesis.page_qa import build_page_qa
from synthesis.recipe import DatasetRecipe
from synthesis.single_step import build_single_step
from synthesis.source import open_run

NO_EFFECT = "single_step: action failed or changed nothing"


@pytest.fixture
def source(fixture_run):
    """The fixture run opened as the dataset stage reads it."""
    opened = open_run(fixture_run.dir)
    yield opened
    opened.close()


def single_steps(source, **recipe) -> tuple[list, Counter]:
    """The single-step drafts of `source` under a recipe with these fields, and what was skipped."""
    skipped = Counter()
    return build_single_step(source, DatasetRecipe(**recipe), skipped), skipped


def test_single_step_tasks_come_from_failures_with_an_effect(source, fixture_run):
    tasks, skipped = single_steps(source)
    ids = fixture_run.record_ids
    assert [t.lineage.record_id for t in tasks] == [ids[1], ids[4], ids[6], ids[8]]  # step 9 timed out
    assert skipped == {NO_EFFECT: 1}
    assert [t.instruction for t in tasks] == [
        'Open the "Jackets" page.',
        'Open the "Jackets" page.',  # the sorted list's main heading; the dedup gate deals with the twin
        'Click "Size guide".',  # no new page: the instruction names the control
        'Open the "Boots" page.',
    ]
    size_guide = tasks[2]
    assert size_guide.lineage.node_ids == ["n0", "n4"] and size_guide.lineage.step == 6
    assert (size_guide.site, size_guide.lineage.model_id, size_guide.lineage.run_id) == (
        "tinyshop",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "fixture-run",
    )
    assert (size_guide.target.mark, size_guide.target.role, size_guide.target.name) == (3, "button", "Size guide")
    assert size_guide.action_text == 'click button "Size guide"'
    assert size_guide.outcome == 'Appears: button "Close". Shows text: "S fits a 86-91 cm chest.".'
    assert size_guide.reasoning.endswith(f'I click "Size guide": {size_guide.outcome}')
    assert size_guide.url == "http://shop.test/" and size_guide.observation_text.startswith("Page: Home · Tiny Shop")


def test_single_step_tasks_take_understood_records_when_the_recipe_says_so(source, fixture_run):
    tasks, skipped = single_steps(source, include_understood=True)
    ids = fixture_run.record_ids
    assert [t.lineage.record_id for t in tasks] == [ids[s] for s in (1, 2, 4, 6, 7, 8)]
    assert tasks[4].instruction == 'Click "Close".' and tasks[4].lineage.node_ids == ["n4", "n0"]
    assert skipped == {NO_EFFECT: 1}


def test_single_step_limit_keeps_the_first_drafts(source):
    tasks, _ = single_steps(source, limit=2)
    assert [t.instruction for t in tasks] == ['Open the "Jackets" page.'] * 2


def test_page_qa_asks_about_every_page_and_the_outcomes_tried_there(source, fixture_run):
    qa = build_page_qa(source, DatasetRecipe())
    by_node = {}
    for row in qa:
        by_node.setdefault(row.lineage.node_ids[0], []).append((row.qa_kind, row.answer))
    assert list(by_node) == ["n0", "n1", "n2", "n3", "n4", "n5"]
    assert by_node["n0"] == [
        ("title", "Home · Tiny Shop"),
        ("heading", "Tiny Shop"),
        ("sections", "Jackets, Boots"),
        ("fields", "Search"),
        ("outcome", 'Navigates to "Jackets · Tiny Shop" (/c/jackets). Main heading: "Jackets".'),
        ("outcome", 'Appears: button "Close". Shows text: "S fits a 86-91 cm chest.".'),
        ("outcome", 'Navigates to "Boots · Tiny Shop" (/c/boots). Main heading: "Boots".'),
    ]
    assert by_node["n5"] == [("title", "Boots · Tiny Shop"), ("heading", "Boots")]  # its timeout changed nothing
    outcomes = [row for row in qa if row.qa_kind == "outcome"]
    assert [row.lineage.record_id for row in outcomes] == [fixture_run.record_ids[s] for s in (1, 6, 8, 2, 4, 7)]
    assert outcomes[0].question == 'What happens when you click "Jackets" on this page?'
    assert {row.id for row in qa} == {row.id for row in build_page_qa(source, DatasetRecipe())}  # stable ids
    assert len({row.id for row in qa}) == len(qa)


def test_page_qa_limit_cuts_at_the_limit(source):
    assert [row.qa_kind for row in build_page_qa(source, DatasetRecipe(limit=3))] == ["title", "heading", "sections"]


def _chain(pages: list[tuple[str, list[str]]]):
    """A path through pages (url path, the link targets it shows), each reached by clicking on the one before."""
    from explorer.graph import ExplorationGraph
    from explorer.records import Action, Node
    from tests.fast.conftest import ORIGIN, element, page

    graph, observations, path = ExplorationGraph(), [], []
    for i, (url, links) in enumerate(pages):
        graph.add_node(Node(id=f"n{i}", url=ORIGIN + url.split("#")[0], raw_url=ORIGIN + url, screenshot="x"))
        els = [element(k + 1, "link", f"to {target}", target) for k, target in enumerate(links)]
        observations.append(page(url, url, [url], els, (200, 200, 200)))
        if i:
            path.append(graph.add_edge(f"n{i - 1}", f"n{i}", Action(kind="click", element_key=f"k{i}")))
    return path, observations[:-1], graph


def _hops(path) -> list[tuple[str, str]]:
    return [(e.src, e.dst) for e in path]


def test_a_detour_past_a_shown_link_is_replaced_by_that_link():
    """Home shows /b: the path home -> /a -> /b -> /c becomes home -> /b -> /c, clicking home's link to /b."""
    from synthesis.multi_step import shortcut

    path, observations, graph = _chain([("/", ["/a", "/b"]), ("/a", ["/b"]), ("/b", ["/c"]), ("/c", [])])
    short = shortcut(path, observations, graph)
    assert _hops(short) == [("n0", "n2"), ("n2", "n3")]
    assert short[0].action.label == 'link "to /b"' and short[0].last_verdict is None  # inferred: replay checks it
    path, observations, graph = _chain([("/", ["/a"]), ("/a", ["/b"]), ("/b", [])])
    assert shortcut(path, observations, graph) == path  # each page links only the next one: as short as it gets
    path, observations, graph = _chain([("/", ["/a", "/b", "/c"]), ("/a", ["/b"]), ("/b", ["/c"]), ("/c", [])])
    assert _hops(shortcut(path, observations, graph)) == [("n0", "n3")]  # the farthest page home links


def test_a_link_to_a_later_state_of_the_same_url_is_no_shortcut():
    """The last step opens a tab on /a (its URL does not name it): home's link to /a does not skip it."""
    from synthesis.multi_step import shortcut

    path, observations, graph = _chain([("/", ["/a"]), ("/a", ["/a#tab"]), ("/a#tab", [])])
    assert shortcut(path, observations, graph) == path
