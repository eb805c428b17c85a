"""SSIM identity within a bucket: "which node is this?" by bucket (a normalized URL, and in `explorer.identity`
the page's structure too), then SSIM against every node of that bucket. URL normalization lives here too.

The plain rule: compare the downscaled grayscale screenshot with every known node of the same bucket
(scikit-image SSIM, 7x7 uniform windows); merge into the most similar one if its score is at least delta, else
it is a new state. `StateIndex` gives exactly that answer, faster:

* a pixel-identical thumbnail (most revisits, once volatile boxes are masked) is found by its digest: SSIM 1;
* otherwise sound upper bounds on every candidate's SSIM (explorer.ssim_bounds) prune the bucket: first a
  block-distance bound for all nodes at once (one matrix-vector product), then window-grid bounds, coarse
  then fine, for the survivors;
* exact SSIM then runs only on candidates whose bound reaches delta, best bound first, stopping as
  soon as no remaining bound can beat the best exact score found; it is computed only where the two
  thumbnails differ (equal to scikit-image's up to 1e-14).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from PIL import Image
from skimage.metrics import structural_similarity

from explorer.config import DEFAULT_DELTA
from explorer.ssim_bounds import (
    BLOCKS,
    STRIDES,
    block_bounds,
    block_means,
    grid_bound,
    grid_fraction,
    local_ssim,
    window_stats,
)

SIZE = (320, 200)  # (width, height) of the grayscale thumbnails SSIM runs on
FLAT = 128  # the grey that masked rectangles are painted in
Rect = tuple[int, int, int, int]  # x0, y0, x1, y1 in thumbnail pixels


def normalize_url(url: str, ignore_params: list[str] | tuple[str, ...] = (), keep_fragment: bool = False) -> str:
    """Canonical form of a URL: lowercase scheme/host, no default port, sorted query, ignored params dropped."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    ignored = set(ignore_params)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ignored)
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), parts.fragment if keep_fragment else ""))


def thumbnail(png: bytes, size: tuple[int, int] = SIZE) -> np.ndarray:
    """The downscaled grayscale uint8 array SSIM compares."""
    img = Image.open(io.BytesIO(png)).convert("L")
    return np.asarray(img.resize(size, Image.Resampling.BOX), dtype=np.uint8)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """The plain metric: scikit-image SSIM of two uint8 thumbnails."""
    return float(structural_similarity(a, b, data_range=255))


def paint(thumb: np.ndarray, rects: Sequence[Rect]) -> np.ndarray:
    """`thumb` with each rectangle painted flat (in place; returned for chaining)."""
    for x0, y0, x1, y1 in rects:
        thumb[y0:y1, x0:x1] = FLAT
    return thumb


def masked_ssim(a: np.ndarray, b: np.ndarray, rects: Sequence[Rect] = ()) -> float:
    """SSIM of two thumbnails with `rects` painted flat on both (copies), computed where they differ
    (explorer.ssim_bounds.local_ssim: the plain metric up to 1e-14, fast when they differ in a small region)."""
    if not rects:
        return local_ssim(a, b)
    return local_ssim(paint(a.copy(), rects), paint(b.copy(), rects))


def plain_identify(
    candidates: list[tuple[str, np.ndarray]], query: np.ndarray, delta: float
) -> tuple[str | None, float]:
    """The plain rule over (node_id, thumbnail) pairs: the best match if its SSIM >= delta, else None."""
    best_id, best = None, -1.0
    for node_id, thumb in candidates:
        score = ssim(thumb, query)
        if score > best:
            best_id, best = node_id, score
    return (best_id, best) if best >= delta else (None, best)


@dataclass
class Match:
    """The answer to "which node is this?": a node id or None (a new state), with the work it took."""

    node_id: str | None
    score: float  # best exact SSIM computed (-1 when nothing was compared)
    candidates: int  # nodes of this URL
    exact: int  # exact SSIM computations run


def _grown(array: np.ndarray | None, n: int, row_shape: tuple[int, ...]) -> np.ndarray:
    """`array` with room for row n (capacity doubled when full; created when None)."""
    if array is not None and n < len(array):
        return array
    grown = np.empty((max(8, 2 * n), *row_shape), np.float32)
    if array is not None:
        grown[:n] = array[:n]
    return grown


def _digest(thumb: np.ndarray) -> bytes:
    return hashlib.blake2b(thumb.tobytes(), digest_size=16).digest()


@dataclass
class _Bucket:
    ids: list[str] = field(default_factory=list)
    thumbs: list[np.ndarray] = field(default_factory=list)
    overlays: dict[int, tuple[Rect, ...]] = field(default_factory=dict)  # node index -> its overlays, if any
    digests: dict[bytes, int] = field(default_factory=dict)  # thumbnail digest -> first node index
    blocks: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # side -> (cap, d), (cap,) norms
    stats: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # stride -> (cap, gh, gw) x2

    def add(self, node_id: str, thumb: np.ndarray, overlays: tuple[Rect, ...] = ()) -> None:
        n = len(self.ids)
        for side in BLOCKS:
            means = block_means(thumb, side)
            old = self.blocks.get(side, (None, None))
            self.blocks[side] = (_grown(old[0], n, means.shape), _grown(old[1], n, ()))
            self.blocks[side][0][n], self.blocks[side][1][n] = means, means @ means
        for k, (mu, sd) in window_stats(thumb).items():
            old = self.stats.get(k, (None, None))
            self.stats[k] = (_grown(old[0], n, mu.shape), _grown(old[1], n, sd.shape))
            self.stats[k][0][n], self.stats[k][1][n] = mu, sd
        if overlays:
            self.overlays[n] = overlays
        else:
            self.digests.setdefault(_digest(thumb), n)
        self.ids.append(node_id)
        self.thumbs.append(thumb)

    def candidates(self, thumb: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        """Nodes whose SSIM bounds all reach delta: (indices, tightest bounds)."""
        idx, bounds = np.arange(len(self.ids)), np.full(len(self.ids), 2.0)
        for side in BLOCKS:
            rows, norms = self.blocks[side]
            mine = (rows[: len(idx)], norms[: len(idx)]) if side == BLOCKS[0] else (rows[idx], norms[idx])
            found = block_bounds(*mine, block_means(thumb, side), thumb.shape, side)
            keep = np.flatnonzero(found >= delta)
            idx, bounds = idx[keep], np.minimum(bounds[keep], found[keep])
            if not idx.size:
                return idx, bounds
        query = window_stats(thumb)
        for k in STRIDES:
            mu, sd = self.stats[k]
            grid = grid_bound(mu[idx], sd[idx], *query[k], grid_fraction(thumb.shape, k))
            keep = np.flatnonzero(grid >= delta)
            idx, bounds = idx[keep], np.minimum(bounds[keep], grid[keep])
            if not idx.size:
                break
        return idx, bounds


class StateIndex:
    """Which node is this? Exact SSIM-within-bucket identity with a sound pre-filter (see module doc).

    A bucket is whatever must match before pixels are compared (a normalized URL; `explorer.identity` adds the
    page's structure). Overlays (thumbnail rectangles) are painted on both sides of a comparison; a comparison
    with overlays on either side skips the bound and runs exact.
    """

    def __init__(self, delta: float = DEFAULT_DELTA):
        self.delta = delta
        self._buckets: dict[str, _Bucket] = {}

    def add(self, node_id: str, bucket: str, thumb: np.ndarray, overlays: tuple[Rect, ...] = ()) -> None:
        """Register a node in a bucket."""
        self._buckets.setdefault(bucket, _Bucket()).add(node_id, thumb, overlays)

    def identify(self, bucket: str, thumb: np.ndarray, overlays: tuple[Rect, ...] = ()) -> Match:
        """The node of `bucket` this thumbnail shows (best SSIM >= delta), or None for a new state."""
        found = self._buckets.get(bucket)
        if not found or not found.ids:
            return Match(None, -1.0, 0, 0)
        if overlays:  # no bound holds once rectangles are painted over: compare with every node
            idx, bounds = np.arange(len(found.ids)), np.full(len(found.ids), 2.0)
        elif not found.overlays and (same := found.digests.get(_digest(thumb))) is not None:
            return Match(found.ids[same], 1.0, len(found.ids), 0)  # pixel-identical: SSIM is exactly 1
        else:
            idx, bounds = found.candidates(thumb, self.delta)
            listed = set(idx.tolist())
            marked = [i for i in found.overlays if i not in listed]
            idx, bounds = np.concatenate([idx, marked]).astype(int), np.concatenate([bounds, np.full(len(marked), 2.0)])
        best_i, best, exact = -1, -1.0, 0
        for j in np.argsort(-bounds, kind="stable"):
            if bounds[j] < best:
                break  # sorted: no later candidate can beat the best exact score
            i = int(idx[j])
            score = masked_ssim(found.thumbs[i], thumb, found.overlays.get(i, ()) + overlays)
            exact += 1
            if score > best or (score == best and i < best_i):
                best_i, best = i, score
        node = found.ids[best_i] if best_i >= 0 and best >= self.delta else None
        return Match(node, best, len(found.ids), exact)
