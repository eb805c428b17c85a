"""Training samples of the fixture run (training.samples): what `load_samples` and `crawl_samples` rebuild, and the
held-out split by page. The fixture's pages: / (steps 1, 6, 7, 8), /c/jackets (2, 4), /c/boots (9)."""

from __future__ import annotations

import pytest

from training.samples import crawl_samples, load_samples, split_by_page

PAGES = {"tinyshop:/", "tinyshop:/c/jackets", "tinyshop:/c/boots"}


@pytest.fixture(scope="module")
def samples(fixture_run):
    """Every judged transition of the fixture run, failures and understood."""
    return load_samples([fixture_run.dir])


def test_load_samples_rebuilds_the_selector_context(samples, fixture_run):
    steps = [int(s.record_id.split("-")[0]) for s in samples]
    assert steps == [1, 2, 4, 6, 7, 8, 9]
    assert [s.record_id for s in samples] == [fixture_run.record_ids[n] for n in steps]
    failures = [s for s in samples if s.kind == fixture_run.failure_kind]
    assert [s.record_id for s in failures] == [fixture_run.record_ids[n] for n in (1, 4, 6, 8, 9)]
    assert {s.kind for s in samples} == {fixture_run.failure_kind, fixture_run.understood_kind}
    by_step = dict(zip(steps, samples, strict=True))
    assert [n for n, s in by_step.items() if not s.selected] == [7]  # the verification action was not picked
    home = by_step[8].observation
    tried = [next(e.name for e in home.elements if e.key == key) for key in by_step[8].tried_keys]
    assert tried == ["Jackets", "Size guide"]  # tried at n0 before Boots
    assert by_step[8].target.name == "Boots" and by_step[8].node == "n0"
    assert by_step[6].transition.description.startswith('Appears: button "Close"')
    assert {s.page_key for s in samples} == PAGES
    assert load_samples([fixture_run.dir], kinds=(fixture_run.failure_kind,)) == failures


def test_crawl_rebuilds_the_judged_transitions(samples, fixture_run):
    crawled = {s.record_id: s for s in crawl_samples(fixture_run.dir)}
    assert {s.kind for s in crawled.values()} == {"crawl"}
    assert sorted(crawled) == [f"step-{n}" for n in (1, 2, 4, 6, 7, 8, 9)]  # gotos have no element
    for sample in samples:
        again = crawled[f"step-{sample.record_id.split('-')[0]}"]
        assert again.transition.description == sample.transition.description, sample.record_id


@pytest.mark.parametrize("share", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("seed", range(4))
def test_split_by_page_keeps_pages_whole_and_both_sides_filled(samples, share, seed):
    train, held = split_by_page(samples, share, seed)
    train_pages, held_pages = {s.page_key for s in train}, {s.page_key for s in held}
    assert train_pages and held_pages and not train_pages & held_pages
    assert train_pages | held_pages == PAGES
    assert sorted(s.record_id for s in train + held) == sorted(s.record_id for s in samples)
    assert split_by_page(samples, share, seed) == (train, held)  # seeded: the same split every time


def test_split_by_page_without_a_share_holds_nothing_out(samples):
    assert split_by_page(samples, 0.0) == (samples, [])


@pytest.mark.parametrize("share", [-0.1, 1.0])
def test_split_by_page_refuses_a_share_outside_0_to_1(samples, share):
    with pytest.raises(ValueError, match="heldout_share"):
        split_by_page(samples, share)
