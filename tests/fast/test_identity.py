"""State identity's pure parts: keys, structure digests, canonical thumbnails, verdicts and the index's paths."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from explorer.dedup import FLAT, StateIndex
from explorer.identity import Identity, canonical_thumbnail, compare, structure_of
from explorer.observe import element_key


def _png(text: str = "", box: tuple[int, int, int, int] | None = None, size=(1280, 800)) -> bytes:
    """A page-like PNG: stripes, an optional text at the top and an optional dark box."""
    img = Image.new("L", size, 250)
    draw = ImageDraw.Draw(img)
    for y in range(0, size[1], 40):
        draw.rectangle([40, y + 10, 600 + (y % 200), y + 24], fill=60)
    if text:
        draw.text((700, 20), text, fill=0)
    if box:
        draw.rectangle(box, fill=20)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def test_element_keys_fold_digits_and_relative_times():
    key = lambda name: element_key("a", "link", name, "body > a")  # noqa: E731
    assert key("posted just now") == key("posted 5 minutes ago") == key("posted an hour ago")
    assert key("Cart (1)") == key("Cart (2)")
    assert key("Cart") != key("Carts")


def test_structure_ignores_order_and_repeats_but_not_a_new_control():
    assert structure_of(["a", "b", "b"]) == structure_of(["b", "a"])
    assert structure_of(["a", "b"]) != structure_of(["a", "b", "close"])


def test_volatile_boxes_are_painted_flat_at_thumbnail_scale():
    thumb, overlays = canonical_thumbnail(_png(text="typed"), volatile=[(680, 0, 400, 60)], overlays=[(0, 0, 40, 40)])
    assert thumb.shape == (200, 320)
    assert (thumb[0:15, 170:270] == FLAT).all()  # (680, 0, 400, 60) CSS px / 4
    assert overlays == ((0, 0, 10, 10),)
    assert not (thumb[0:10, 0:10] == FLAT).all()  # overlays are painted only when two thumbnails are compared


def test_compare_tests_url_then_structure_then_pixels():
    plain, _ = canonical_thumbnail(_png())
    typed, _ = canonical_thumbnail(_png(text="hello"), volatile=[(680, 0, 400, 60)])
    boxed, _ = canonical_thumbnail(_png(box=(200, 300, 900, 600)))
    a = Identity("http://a.test/", structure_of(["x"]), plain)
    assert compare(a, Identity("http://a.test/?p=2", a.structure, plain), 0.999).reason == "url"
    assert compare(a, Identity(a.url, structure_of(["x", "y"]), plain), 0.999).reason == "structure"
    assert compare(a, Identity(a.url, a.structure, boxed), 0.999).reason == "pixels"
    masked_plain, _ = canonical_thumbnail(_png(), volatile=[(680, 0, 400, 60)])
    assert compare(Identity(a.url, a.structure, masked_plain), Identity(a.url, a.structure, typed), 0.999).same


def test_index_finds_identical_thumbnails_by_digest_and_compares_overlays_exactly():
    plain, _ = canonical_thumbnail(_png())
    boxed, _ = canonical_thumbnail(_png(box=(200, 300, 900, 600)))
    index = StateIndex(0.999)
    index.add("plain", "u", plain)
    index.add("boxed", "u", boxed)
    hit = index.identify("u", plain.copy())
    assert (hit.node_id, hit.score, hit.exact) == ("plain", 1.0, 0)  # digest: no SSIM computed
    # the dark box drawn over the page for a moment (an overlay): masked on both sides, it is the plain page
    only_plain = StateIndex(0.999)
    only_plain.add("plain", "u", plain)
    assert only_plain.identify("u", boxed.copy()).node_id is None
    over = only_plain.identify("u", boxed.copy(), overlays=((45, 70, 230, 155),))
    assert over.node_id == "plain" and over.exact == 1
    assert index.identify("v", plain).node_id is None  # another bucket
    assert np.array_equal(plain, canonical_thumbnail(_png())[0])  # painting overlays never touched the stored one
