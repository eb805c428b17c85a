"""State identity: "which node is this?" by normalized URL, then SSIM against every node of that URL.

The plain rule: compare the downscaled grayscale screenshot with every known node of the same
normalized URL (scikit-image SSIM, 7x7 uniform windows); merge into the most similar one if its score
is at least delta, else it is a new state. `StateIndex` gives exactly that answer, faster:

* every node's window statistics are cached on strided grids of SSIM windows;
* a sound upper bound on each candidate's SSIM comes from those statistics alone. Per window,
  SSIM = l * cs with l <= 1, and by Cauchy-Schwarz cs <= (2 sx sy + C2) / (sx^2 + sy^2 + C2); the
  windows off the grid are bounded by 1. The bound is vectorized over all nodes of the URL, first on
  a coarse grid, then on a finer one for the survivors (each bound is sound on its own);
* exact SSIM then runs only on candidates whose bound reaches delta, best bound first, stopping as
  soon as no remaining bound can beat the best exact score found.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from PIL import Image
from scipy.ndimage import uniform_filter
from skimage.metrics import structural_similarity

from explorer.config import DEFAULT_DELTA

SIZE = (320, 200)  # (width, height) of the grayscale thumbnails SSIM runs on
WIN = 7  # scikit-image's default window
STRIDES = (8, 2)  # coarse-to-fine bound grids: every k-th SSIM window in each axis
_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2
_COV_NORM = WIN * WIN / (WIN * WIN - 1)  # scikit-image's sample covariance
_MARGIN = 1e-5  # float32 statistics: keep the bound an upper bound


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


def _window_stats(gray: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Window means and standard deviations on each bound grid (cropped like scikit-image), float32."""
    x = gray.astype(np.float64)
    ux = uniform_filter(x, size=WIN)
    sx = np.sqrt(np.maximum(_COV_NORM * (uniform_filter(x * x, size=WIN) - ux * ux), 0))
    pad = (WIN - 1) // 2
    stats = {}
    for k in STRIDES:
        grid = (slice(pad, -pad, k), slice(pad, -pad, k))
        stats[k] = (ux[grid].astype(np.float32), sx[grid].astype(np.float32))
    return stats


def _grid_fraction(shape: tuple[int, int], stride: int) -> float:
    """Share of all SSIM windows that lie on the grid of `stride`."""
    pad = (WIN - 1) // 2
    h, w = shape[0] - 2 * pad, shape[1] - 2 * pad
    return (len(range(0, h, stride)) * len(range(0, w, stride))) / (h * w)


def _bound(mx: np.ndarray, sx: np.ndarray, my: np.ndarray, sy: np.ndarray, f: float) -> np.ndarray:
    """Upper bounds on SSIM for stacked node statistics (n, gh, gw) against one query's (gh, gw)."""
    lum = (2 * mx * my + _C1) / (mx * mx + my * my + _C1)
    con = (2 * sx * sy + _C2) / (sx * sx + sy * sy + _C2)
    return f * (lum * con).mean(axis=(1, 2)) + (1 - f) + _MARGIN


@dataclass
class Match:
    """The answer to "which node is this?": a node id or None (a new state), with the work it took."""

    node_id: str | None
    score: float  # best exact SSIM computed (-1 when nothing was compared)
    candidates: int  # nodes of this URL
    exact: int  # exact SSIM computations run


@dataclass
class _Bucket:
    ids: list[str] = field(default_factory=list)
    thumbs: list[np.ndarray] = field(default_factory=list)
    stats: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # stride -> (n, gh, gw) x2

    def add(self, node_id: str, thumb: np.ndarray) -> None:
        n = len(self.ids)
        for k, (mu, sd) in _window_stats(thumb).items():
            if k not in self.stats or n == len(self.stats[k][0]):  # grow by doubling
                cap = max(8, 2 * n)
                old = self.stats.get(k)
                grown = tuple(np.empty((cap, *a.shape), np.float32) for a in (mu, sd))
                if old is not None:
                    grown[0][:n], grown[1][:n] = old[0][:n], old[1][:n]
                self.stats[k] = grown
            self.stats[k][0][n], self.stats[k][1][n] = mu, sd
        self.ids.append(node_id)
        self.thumbs.append(thumb)

    def candidates(self, thumb: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        """Nodes whose SSIM bound reaches delta, refined grid by grid: (indices, finest bounds)."""
        n = len(self.ids)
        query = _window_stats(thumb)
        idx, bounds = None, np.empty(0)
        for k in STRIDES:
            mu, sd = self.stats[k]
            mx, sx = (mu[:n], sd[:n]) if idx is None else (mu[idx], sd[idx])
            bounds = _bound(mx, sx, *query[k], _grid_fraction(thumb.shape, k))
            keep = np.flatnonzero(bounds >= delta)
            idx, bounds = (keep if idx is None else idx[keep]), bounds[keep]
            if not idx.size:
                break
        return idx, bounds


class StateIndex:
    """Which node is this? Exact SSIM-within-URL identity with a sound pre-filter (see module doc)."""

    def __init__(self, delta: float = DEFAULT_DELTA):
        self.delta = delta
        self._buckets: dict[str, _Bucket] = {}

    def add(self, node_id: str, url: str, thumb: np.ndarray) -> None:
        """Register a node under its normalized URL."""
        self._buckets.setdefault(url, _Bucket()).add(node_id, thumb)

    def nodes_of(self, url: str) -> list[str]:
        """Node ids registered under a normalized URL, in insertion order."""
        bucket = self._buckets.get(url)
        return list(bucket.ids) if bucket else []

    def identify(self, url: str, thumb: np.ndarray) -> Match:
        """The node of `url` this thumbnail shows (best SSIM >= delta), or None for a new state."""
        bucket = self._buckets.get(url)
        if not bucket or not bucket.ids:
            return Match(None, -1.0, 0, 0)
        idx, bounds = bucket.candidates(thumb, self.delta)
        best_i, best, exact = -1, -1.0, 0
        for j in np.argsort(-bounds, kind="stable"):
            if bounds[j] < best:
                break  # sorted: no later candidate can beat the best exact score
            i = int(idx[j])
            score = ssim(bucket.thumbs[i], thumb)
            exact += 1
            if score > best or (score == best and i < best_i):
                best_i, best = i, score
        node = bucket.ids[best_i] if best_i >= 0 and best >= self.delta else None
        return Match(node, best, len(bucket.ids), exact)
