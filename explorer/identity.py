"""State identity: which state a page shows, decided one way for exploration, metrics and replay.

Two observations show one state when all three hold:

1. **URL**: their normalized URLs are equal (`explorer.dedup.normalize_url`);
2. **structure**: they offer the same set of element keys (tag, role, name, structural path), so an opened menu,
   modal or tab, which adds or hides controls, is a new state even where few pixels change;
3. **pixels**: the seed's rule, SSIM >= delta, on a canonical thumbnail: the screenshot with its volatile boxes
   (form fields with their typed values, caret and focus ring; relative times; the site config's `volatile`
   selectors) painted one flat grey. What the browser draws over a page for a moment (a keyboard focus ring,
   the validation bubble) is painted on both sides of a comparison. The stored screenshot keeps everything;
   only the comparison ignores it.

URL and structure select a bucket of `explorer.dedup.StateIndex`; SSIM decides within it.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from explorer.dedup import SIZE, Rect, masked_ssim, paint, thumbnail
from explorer.records import Box, Node, Observation


@dataclass(frozen=True)
class Identity:
    """What state identity compares: normalized URL, structure digest and the canonical thumbnail."""

    url: str
    structure: str
    thumb: np.ndarray  # volatile boxes painted flat
    overlays: tuple[Rect, ...] = ()  # thumbnail rectangles painted on both sides of a comparison

    @property
    def bucket(self) -> str:
        """The StateIndex bucket: states are only ever compared within one URL and structure."""
        return f"{self.url}#{self.structure}"


def structure_of(keys: Iterable[str]) -> str:
    """Digest of a page's set of element keys (order and repeats ignored)."""
    return hashlib.sha1("\n".join(sorted(set(keys))).encode()).hexdigest()[:16]


def canonical_thumbnail(
    png: bytes, volatile: Sequence[Box] = (), overlays: Sequence[Box] = (), size: tuple[int, int] = SIZE
) -> tuple[np.ndarray, tuple[Rect, ...]]:
    """The grayscale thumbnail SSIM compares, the volatile boxes (CSS px of the screenshot) painted flat, and the
    overlays as thumbnail rectangles."""
    thumb = thumbnail(png, size).copy()  # writable: the volatile boxes are painted on it
    width, height = Image.open(io.BytesIO(png)).size  # the PNG header only
    sx, sy = size[0] / width, size[1] / height

    def rect(box: Box) -> Rect:
        x, y, w, h = box
        x0, y0 = max(0, math.floor(x * sx)), max(0, math.floor(y * sy))
        return x0, y0, min(size[0], math.ceil((x + w) * sx)), min(size[1], math.ceil((y + h) * sy))

    return paint(thumb, [rect(b) for b in volatile]), tuple(rect(b) for b in overlays)


def of_observation(obs: Observation, url: str) -> Identity:
    """The identity of an observation whose URL normalizes to `url`."""
    thumb, overlays = canonical_thumbnail(obs.screenshot, obs.volatile, obs.overlays)
    return Identity(url, structure_of(e.key for e in obs.elements), thumb, overlays)


def of_node(node: Node, png: bytes) -> Identity:
    """The identity of a stored node (`png`: its screenshot blob)."""
    thumb, overlays = canonical_thumbnail(png, node.volatile, node.overlays)
    return Identity(node.url, structure_of(node.element_keys), thumb, overlays)


def pixel_ssim(a: Identity, b: Identity) -> float:
    """The canonical SSIM of two identities: volatile boxes already flat, both sides' overlays painted on both."""
    return masked_ssim(a.thumb, b.thumb, a.overlays + b.overlays)


@dataclass(frozen=True)
class Verdict:
    """Whether two identities are one state, and if not, the first test that tells them apart."""

    same: bool
    score: float | None  # canonical SSIM (None when URL or structure already differ)
    reason: str = ""  # "url", "structure" or "pixels" when not the same


def compare(a: Identity, b: Identity, delta: float) -> Verdict:
    """One state or two: URL, then structure, then canonical SSIM >= delta."""
    if a.url != b.url:
        return Verdict(False, None, "url")
    if a.structure != b.structure:
        return Verdict(False, None, "structure")
    score = pixel_ssim(a, b)
    return Verdict(score >= delta, score, "" if score >= delta else "pixels")
