"""Sound upper bounds on scikit-image SSIM (7x7 uniform windows, data range 255, sample covariance), computed
from cached per-image summaries, so that `explorer.dedup.StateIndex` runs exact SSIM on few candidates.

Two bounds, each an upper bound on its own:

* **Block distance** (cheap, vectorized over all nodes as one matrix-vector product). Per window,
  1 - SSIM_w >= max(1 - cs_w, 1 - l_w) with 1 - cs_w = COV_NORM var_w(x-y) / (vx+vy+C2) and
  1 - l_w = mean_w(x-y)^2 / (mx^2+my^2+C1); bounding both denominators by their largest value and combining
  gives 1 - SSIM_w >= mean_w((x-y)^2) / K. Summed over the N windows, every pixel at least 6 px from the
  border lies in 49 of them, so N (1 - SSIM) >= ||x_I - y_I||^2 / K, and by Cauchy-Schwarz within b x b
  blocks, ||x_I - y_I||^2 >= b^2 ||a(x) - a(y)||^2 where a() are the block means (16 px blocks for all
  nodes, then 8 px blocks for the survivors).
* **Window grid** (sharper, per candidate). Per window, SSIM = l * cs with l <= 1 and, by Cauchy-Schwarz,
  cs <= (2 sx sy + C2) / (sx^2 + sy^2 + C2); on a grid of every k-th window, the windows off the grid bounded
  by 1.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import uniform_filter

WIN = 7  # scikit-image's default window
PAD = (WIN - 1) // 2
STRIDES = (8, 4)  # coarse-to-fine grids: every k-th SSIM window in each axis
BLOCKS = (16, 8)  # block sides of the block-distance bounds, coarse then fine, in thumbnail pixels
C1 = (0.01 * 255) ** 2
C2 = (0.03 * 255) ** 2
COV_NORM = WIN * WIN / (WIN * WIN - 1)
MARGIN = 1e-5  # float32 statistics: keep the bounds upper bounds
# 1 / K = 1 / (1/alpha + 1/beta): alpha = COV_NORM / max(vx+vy+C2), beta = 1 / max(mx^2+my^2+C1)
_VAR_MAX = COV_NORM * (255 / 2) ** 2
K = (2 * _VAR_MAX + C2) / COV_NORM + (2 * 255**2 + C1)


def window_stats(gray: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Window means and standard deviations on each bound grid (cropped like scikit-image), float32."""
    x = gray.astype(np.float64)
    ux = uniform_filter(x, size=WIN)
    sx = np.sqrt(np.maximum(COV_NORM * (uniform_filter(x * x, size=WIN) - ux * ux), 0))
    stats = {}
    for k in STRIDES:
        grid = (slice(PAD, -PAD, k), slice(PAD, -PAD, k))
        stats[k] = (ux[grid].astype(np.float32), sx[grid].astype(np.float32))
    return stats


def grid_fraction(shape: tuple[int, int], stride: int) -> float:
    """Share of all SSIM windows that lie on the grid of `stride`."""
    h, w = shape[0] - 2 * PAD, shape[1] - 2 * PAD
    return (len(range(0, h, stride)) * len(range(0, w, stride))) / (h * w)


def grid_bound(mx: np.ndarray, sx: np.ndarray, my: np.ndarray, sy: np.ndarray, f: float) -> np.ndarray:
    """Upper bounds on SSIM for stacked node statistics (n, gh, gw) against one query's (gh, gw)."""
    lum = (2 * mx * my + C1) / (mx * mx + my * my + C1)
    con = (2 * sx * sy + C2) / (sx * sx + sy * sy + C2)
    return f * (lum * con).mean(axis=(1, 2)) + (1 - f) + MARGIN


def block_means(gray: np.ndarray, block: int) -> np.ndarray:
    """The block x block means of the pixels that lie in all 49 windows around them, minus 128 (float32 vector:
    centred, so that float32 distances lose little)."""
    inner = gray[2 * PAD : -2 * PAD, 2 * PAD : -2 * PAD].astype(np.float32)
    h, w = (inner.shape[0] // block) * block, (inner.shape[1] // block) * block
    return inner[:h, :w].reshape(h // block, block, w // block, block).mean(axis=(1, 3)).ravel() - 128


def block_bounds(
    blocks: np.ndarray, norms: np.ndarray, query: np.ndarray, shape: tuple[int, int], block: int
) -> np.ndarray:
    """Upper bounds on SSIM for stacked block-mean vectors (n, d) with squared norms (n,) against one query's.

    The squared distance is ||a||^2 - 2 a.q + ||q||^2 in float32, less its worst-case rounding error
    (2 d u (||a||^2 + ||q||^2), u = 2^-24), so the bound stays an upper bound."""
    qn = float(query @ query)
    sq = norms + qn - 2 * (blocks @ query)
    sq = np.maximum(sq - 2 * query.size * 2.0**-24 * (norms + qn), 0)
    windows = (shape[0] - 2 * PAD) * (shape[1] - 2 * PAD)
    return 1 - block * block * sq / (K * windows) + MARGIN


def local_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """scikit-image's SSIM of two uint8 images, computed only where they differ.

    A window whose 49 pixels are equal in both images scores exactly 1, so the mean is 1 less the shortfall of
    the windows that touch a differing pixel; those are evaluated by scikit-image's formulas on the bounding box
    of the differences (plus the windows' reach). Equal to `structural_similarity(a, b, data_range=255)` up to
    floating-point rounding (scipy's running-sum filters; about 1e-15), at a fraction of its cost when two
    screenshots differ in a small region.
    """
    rows, cols = np.flatnonzero((a != b).any(axis=1)), np.flatnonzero((a != b).any(axis=0))
    if not rows.size:
        return 1.0
    h, w = a.shape
    # window centres that see a differing pixel, within scikit-image's cropped range
    r0, r1 = max(PAD, rows[0] - PAD), min(h - 1 - PAD, rows[-1] + PAD)
    c0, c1 = max(PAD, cols[0] - PAD), min(w - 1 - PAD, cols[-1] + PAD)
    windows = (h - 2 * PAD) * (w - 2 * PAD)
    if r0 > r1 or c0 > c1:
        return 1.0
    sub = (slice(r0 - PAD, r1 + PAD + 1), slice(c0 - PAD, c1 + PAD + 1))
    x, y = a[sub].astype(np.float64), b[sub].astype(np.float64)
    ux, uy = uniform_filter(x, size=WIN), uniform_filter(y, size=WIN)
    uxx, uyy, uxy = (uniform_filter(p, size=WIN) for p in (x * x, y * y, x * y))
    vx, vy, vxy = COV_NORM * (uxx - ux * ux), COV_NORM * (uyy - uy * uy), COV_NORM * (uxy - ux * uy)
    s = ((2 * ux * uy + C1) * (2 * vxy + C2)) / ((ux**2 + uy**2 + C1) * (vx + vy + C2))
    inner = s[PAD:-PAD, PAD:-PAD]  # the centres whose whole window lies in the box
    return float(1 - (inner.size - inner.sum(dtype=np.float64)) / windows)
