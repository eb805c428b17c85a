"""State identity on real screenshots of the bundled sites: merge, split, and the exact pre-filter."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.calibration import build_pairs, error_rates, load_specs
from explorer.dedup import (
    DEFAULT_DELTA,
    STRIDES,
    StateIndex,
    _bound,
    _grid_fraction,
    _window_stats,
    plain_identify,
    ssim,
    thumbnail,
)


@pytest.fixture(scope="module")
async def labelled_pairs(chromium, site_config):
    sites = {name: site_config(name) for name in ("shop", "forum", "classifieds")}
    return await build_pairs(chromium, sites, load_specs())


def test_reload_merges_and_modal_splits(labelled_pairs):
    by_label = {p.label: p for p in labelled_pairs}
    reload = by_label["shop product, reloaded"]
    modal = by_label["forum thread vs reply modal open"]
    index = StateIndex(DEFAULT_DELTA)
    index.add("product", "u/p1", thumbnail(reload.a))
    index.add("thread", "u/t1", thumbnail(modal.a))
    assert index.identify("u/p1", thumbnail(reload.b)).node_id == "product"  # same page after a reload
    assert index.identify("u/t1", thumbnail(modal.b)).node_id is None  # same URL, modal open: a new state


def test_prefilter_gives_the_plain_answer_on_every_labelled_pair(labelled_pairs):
    for pair in labelled_pairs:
        a, b = thumbnail(pair.a), thumbnail(pair.b)
        for delta in (0.9, DEFAULT_DELTA, 0.9999):
            index = StateIndex(delta)
            index.add("a", "u", a)
            got = index.identify("u", b)
            want = plain_identify([("a", a)], b, delta)
            assert got.node_id == want[0], (pair.label, delta)
            assert got.exact == 0 or got.score == pytest.approx(want[1], abs=1e-12)


def test_prefilter_gives_the_plain_answer_against_many_nodes_of_one_url(labelled_pairs):
    """All screenshots under one URL: every query gets exactly the plain rule's node, with fewer SSIMs."""
    thumbs = [thumbnail(png) for p in labelled_pairs for png in (p.a, p.b)]
    for delta in (0.95, DEFAULT_DELTA):
        index, plain, exact_runs = StateIndex(delta), [], 0
        for i, thumb in enumerate(thumbs):
            got = index.identify("u", thumb)
            want = plain_identify(plain, thumb, delta)
            assert got.node_id == want[0]
            exact_runs += got.exact
            if got.node_id is None:
                index.add(str(i), "u", thumb)
                plain.append((str(i), thumb))
        assert exact_runs < sum(range(len(plain)))  # the bound pruned real work


def test_every_bound_grid_is_an_upper_bound(labelled_pairs):
    thumbs = [thumbnail(p.b) for p in labelled_pairs]
    stats = [_window_stats(t) for t in thumbs]
    for q in range(8):
        exact = np.array([ssim(t, thumbs[q]) for t in thumbs])
        for k in STRIDES:
            mx = np.stack([s[k][0] for s in stats])
            sx = np.stack([s[k][1] for s in stats])
            bounds = _bound(mx, sx, *stats[q][k], _grid_fraction(thumbs[q].shape, k))
            assert (bounds >= exact).all(), k


def test_calibrated_delta_separates_the_labelled_set(labelled_pairs):
    scored = [(p.same, ssim(thumbnail(p.a), thumbnail(p.b))) for p in labelled_pairs]
    merges, splits = error_rates(scored, DEFAULT_DELTA)
    assert (merges, splits) == (0.0, 0.0)  # the calibration the README reports
