"""State identity's URL half: the normalized URL that, with the screenshot, names a SCALE-Hop node (the SSIM half on
real screenshots is tests/test_dedup.py)."""

import pytest

from explorer.dedup import normalize_url


@pytest.mark.parametrize(
    "url,options,normalized",
    [
        ("HTTP://Shop.Example:80/c/x?b=2&a=1&sid=9#top", {"ignore_params": ["sid"]}, "http://shop.example/c/x?a=1&b=2"),
        ("http://a.test/p#tab", {"keep_fragment": True}, "http://a.test/p#tab"),
        ("http://a.test/p#tab", {}, "http://a.test/p"),
        ("http://a.test", {}, "http://a.test/"),
    ],
)
def test_url_normalization(url, options, normalized):
    assert normalize_url(url, **options) == normalized
