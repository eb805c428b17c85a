"""Deterministic inline SVG illustrations (product shots, listing photos, avatars, logos)."""

from __future__ import annotations

from markupsafe import Markup, escape

# Glyphs drawn in a 100x100 box; "F" is the main fill, "L" a lighter accent.
_GLYPHS = {
    "jacket": (
        '<path fill="F" d="M35 14 50 24 65 14 86 28 78 52 70 47V88H30V47L22 52 14 28Z"/>',
        '<path stroke="L" stroke-width="3" d="M50 24V88"/>',
        '<rect fill="L" x="36" y="58" width="9" height="6" rx="2"/>',
    ),
    "boot": (
        '<path fill="F" d="M30 12h26v46l26 9q8 3 8 11v8H30z"/>',
        '<rect fill="L" x="28" y="82" width="64" height="8" rx="3"/>',
        '<path stroke="L" stroke-width="3" d="M38 24h12M38 34h12M38 44h12"/>',
    ),
    "backpack": (
        '<path fill="none" stroke="F" stroke-width="6" d="M40 24v-8q10-10 20 0v8"/>',
        '<rect fill="F" x="24" y="22" width="52" height="68" rx="15"/>',
        '<rect fill="L" x="34" y="56" width="32" height="24" rx="6"/>',
    ),
    "tent": (
        '<polygon fill="F" points="50,12 92,86 8,86"/>',
        '<polygon fill="L" points="50,40 65,86 35,86"/>',
        '<path stroke="F" stroke-width="3" d="M50 12 44 4M50 12l6-8"/>',
    ),
    "pot": (
        '<rect fill="F" x="20" y="40" width="60" height="44" rx="9"/>',
        '<rect fill="F" x="15" y="31" width="70" height="10" rx="5"/>',
        '<rect fill="L" x="44" y="23" width="12" height="8" rx="3"/>',
        '<path stroke="L" stroke-width="3" fill="none" d="M38 18q-4-6 0-12M62 18q-4-6 0-12"/>',
    ),
    "compass": (
        '<circle fill="none" stroke="F" stroke-width="8" cx="50" cy="50" r="36"/>',
        '<polygon fill="F" points="50,20 58,50 50,80 42,50"/>',
        '<circle fill="L" cx="50" cy="50" r="6"/>',
    ),
    "sofa": (
        '<rect fill="F" x="16" y="30" width="68" height="30" rx="8"/>',
        '<rect fill="F" x="8" y="46" width="84" height="28" rx="8"/>',
        '<rect fill="L" x="22" y="52" width="56" height="12" rx="4"/>',
        '<path stroke="F" stroke-width="5" d="M18 74v10M82 74v10"/>',
    ),
    "monitor": (
        '<rect fill="F" x="10" y="16" width="80" height="52" rx="5"/>',
        '<rect fill="L" x="16" y="22" width="68" height="40" rx="2"/>',
        '<path fill="F" d="M42 68h16l4 14H38z"/>',
        '<rect fill="F" x="30" y="82" width="40" height="5" rx="2"/>',
    ),
    "bike": (
        '<circle fill="none" stroke="F" stroke-width="6" cx="24" cy="64" r="17"/>',
        '<circle fill="none" stroke="F" stroke-width="6" cx="76" cy="64" r="17"/>',
        '<path fill="none" stroke="F" stroke-width="5" d="M24 64 40 36h30L76 64M40 36l12 28 18-28"/>',
        '<path fill="none" stroke="F" stroke-width="6" stroke-linecap="round" d="M34 28h14M70 36l-4-10h8"/>',
        '<circle fill="L" cx="52" cy="64" r="5"/>',
    ),
    "book": (
        '<rect fill="F" x="18" y="62" width="64" height="14" rx="3"/>',
        '<rect fill="L" x="24" y="46" width="56" height="14" rx="3"/>',
        '<rect fill="F" x="14" y="30" width="60" height="14" rx="3"/>',
        '<rect fill="L" x="24" y="14" width="52" height="14" rx="3"/>',
    ),
    "shirt": (
        '<path fill="F" d="M36 12q14 10 28 0l26 14-10 18-10-5v49H30V39l-10 5-10-18z"/>',
        '<circle fill="L" cx="50" cy="46" r="5"/>',
    ),
    "plant": (
        '<ellipse fill="L" cx="36" cy="34" rx="11" ry="20" transform="rotate(-25 36 34)"/>',
        '<ellipse fill="L" cx="64" cy="34" rx="11" ry="20" transform="rotate(25 64 34)"/>',
        '<ellipse fill="F" cx="50" cy="28" rx="10" ry="22"/>',
        '<path fill="F" d="M28 58h44l-6 32H34z"/>',
    ),
    "ball": (
        '<circle fill="F" cx="50" cy="50" r="38"/>',
        '<path fill="none" stroke="L" stroke-width="4" d="M14 40q36 12 72 0M14 60q36-12 72 0M50 12q-14 38 0 76"/>',
    ),
    "guitar": (
        '<circle fill="F" cx="40" cy="66" r="22"/>',
        '<circle fill="F" cx="52" cy="48" r="15"/>',
        '<circle fill="L" cx="44" cy="60" r="6"/>',
        '<path stroke="F" stroke-width="7" d="M54 46 84 14"/>',
        '<rect fill="L" x="80" y="6" width="10" height="12" rx="2"/>',
    ),
}


def glyph_names() -> list[str]:
    """Names of the available glyphs."""
    return sorted(_GLYPHS)


def picture(
    uid: str, glyph: str, hue: int, width: int = 400, height: int = 300, variant: int = 0, label: str = ""
) -> Markup:
    """A product-shot style illustration: gradient backdrop, soft circles, the glyph centered."""
    h2 = (hue + 35 + variant * 40) % 360
    angle = (variant * 37) % 90
    scale = 0.62 - 0.06 * (variant % 3)
    size = min(width, height) * scale
    gx, gy = (width - size) / 2 + (variant % 2) * width * 0.06, (height - size) / 2
    body = "".join(_GLYPHS.get(glyph, _GLYPHS["compass"]))
    body = body.replace('"F"', f'"hsl({hue},45%,38%)"').replace('"L"', f'"hsl({h2},70%,86%)"')
    gid = f"g{uid}"
    return Markup(
        f'<svg class="pic" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid slice">'
        f'<defs><linearGradient id="{gid}" gradientTransform="rotate({angle})">'
        f'<stop offset="0" stop-color="hsl({hue},55%,93%)"/><stop offset="1" stop-color="hsl({h2},50%,80%)"/>'
        f'</linearGradient></defs><rect width="{width}" height="{height}" fill="url(#{gid})"/>'
        f'<circle cx="{width * 0.82:.0f}" cy="{height * 0.2:.0f}" r="{height * 0.28:.0f}" fill="#fff" opacity=".35"/>'
        f'<circle cx="{width * 0.12:.0f}" cy="{height * 0.9:.0f}" r="{height * 0.22:.0f}" fill="#fff" opacity=".25"/>'
        f'<ellipse cx="{width / 2:.0f}" cy="{gy + size * 0.97:.0f}" rx="{size * 0.42:.0f}" ry="{size * 0.06:.0f}" '
        f'fill="#000" opacity=".08"/>'
        f'<g transform="translate({gx:.1f} {gy:.1f}) scale({size / 100:.3f})">{body}</g></svg>'
    )


def avatar(name: str, size: int = 40) -> Markup:
    """A round avatar with the user's initials, colored by a stable hash of the name."""
    hue = stable_hue(name)
    initials = "".join(p[0] for p in name.replace("_", " ").split()[:2]).upper() or "?"
    return Markup(
        f'<svg class="avatar" width="{size}" height="{size}" viewBox="0 0 40 40" xmlns="http://www.w3.org/2000/svg" '
        f'aria-hidden="true"><circle cx="20" cy="20" r="20" fill="hsl({hue},55%,45%)"/>'
        f'<text x="20" y="25" text-anchor="middle" font-size="14" font-family="sans-serif" font-weight="700" '
        f'fill="#fff">{initials[:2]}</text></svg>'
    )


def stars(rating: float, size: int = 16) -> Markup:
    """Five stars, filled to `rating` (0-5), as one inline SVG."""
    pct = max(0.0, min(5.0, rating)) / 5 * 100
    star = "M10 1.5l2.6 5.4 5.9.8-4.3 4.1 1 5.9L10 14.9l-5.2 2.8 1-5.9L1.5 7.7l5.9-.8z"
    paths = "".join(f'<path transform="translate({i * 20} 0)" d="{star}"/>' for i in range(5))
    return Markup(
        f'<span class="stars" title="{rating:.1f} out of 5" aria-label="{rating:.1f} out of 5">'
        f'<svg width="{size * 5}" height="{size}" viewBox="0 0 100 20" aria-hidden="true">'
        f'<g fill="#d6d3d1">{paths}</g><g fill="#f59e0b" style="clip-path: inset(0 {100 - pct:.0f}% 0 0)">{paths}</g>'
        f"</svg></span>"
    )


def logo(mark: str, hue: int) -> Markup:
    """A small square brand mark with one letter."""
    return Markup(
        f'<svg class="logo-mark" width="34" height="34" viewBox="0 0 34 34" aria-hidden="true" '
        f'xmlns="http://www.w3.org/2000/svg"><rect width="34" height="34" rx="9" fill="hsl({hue},60%,36%)"/>'
        f'<path d="M7 25 15 11l5 8 3-4 5 10z" fill="hsl({hue},70%,85%)" opacity=".55"/>'
        f'<text x="17" y="23" text-anchor="middle" font-size="16" font-family="sans-serif" font-weight="800" '
        f'fill="#fff">{mark}</text></svg>'
    )


def stable_hue(text: str) -> int:
    """A hue in [0, 360) derived from `text` without Python's salted hash."""
    h = 0
    for ch in text:
        h = (h * 131 + ord(ch)) % 1_000_003
    return h % 360
