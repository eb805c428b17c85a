"""Observation of a page: element extraction, Set-of-Mark overlay and the compact text form."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from PIL import Image, ImageDraw, ImageFont
from playwright.async_api import Page

from explorer.records import Element, Observation

_PALETTE = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#0a9396", "#f032e6", "#9a6324", "#800000"]


@cache
def page_script(name: str) -> str:
    """A function expression `(args) => name(args)` with the shared helpers (dom.js, volatile.js) inlined."""
    js = resources.files("explorer") / "js"
    helpers = "\n".join((js / f"{helper}.js").read_text() for helper in ("dom", "volatile"))
    body = (js / f"{name}.js").read_text()
    func = re.search(r"function (\w+)\(", body).group(1)
    return f"(args) => {{\n{helpers}\n{body}\nreturn {func}(args);\n}}"


# Set before any page script runs: the field that failed a submit's validation, and when (volatile.js masks the
# browser's bubble under it for state identity).
INVALID_WATCH = """document.addEventListener('invalid', (e) => {
  const last = window.__scalehopInvalid;
  if (!last || performance.now() - last.t > 100) window.__scalehopInvalid = {el: e.target, t: performance.now()};
}, true);"""


_UNIT = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?|years?|yrs?|[smhdwy])"
# relative times: "just now", "3 minutes ago", "a day ago", "in 2 days". Folded in element names here; the page
# script (volatile.js) gets the same pattern to find them in text.
RELATIVE_TIME = re.compile(
    rf"\b(?:just now|yesterday|\d+\s*{_UNIT}\s+ago|(?:an?|one|a few)\s+{_UNIT}\s+ago|in\s+\d+\s+{_UNIT})(?!\w)", re.I
)


def element_key(tag: str, role: str, name: str, path: str, frame: tuple[str, ...] = ()) -> str:
    """Stable identity of an element across observations: frame + structural path + tag + role + name.

    Digits in the name are folded ("Cart (1)" and "Cart (2)" are one element whose name changed), and so are
    relative times ("posted just now" and "posted 5 minutes ago" are one link).
    """
    folded = re.sub(r"\d+", "#", RELATIVE_TIME.sub("<time>", name).lower())[:60]
    raw = "|".join([" > ".join(frame), path, tag, role, folded])
    return hashlib.sha1(raw.encode()).hexdigest()[:12]


MASKED = ("input[type=password]",)  # painted over in every screenshot, whatever the site config says
MASK_COLOR = "#000000"


async def observe(
    page: Page,
    *,
    timeout_s: float = 10.0,
    max_elements: int = 300,
    mask: Sequence[str] = (),
    volatile: Sequence[str] = (),
) -> Observation:
    """Extract elements, take the viewport screenshot and draw the Set-of-Mark overlay. Password fields and the
    elements the CSS selectors `mask` match are painted over (one flat colour) at capture, so neither the
    screenshot nor the overlay drawn on it holds their pixels. The boxes state identity ignores (fields, focus
    ring, validation bubble, relative times, the `volatile` selectors) come back as `Observation.volatile` and
    `Observation.overlays`."""
    args = {"maxElements": max_elements, "maxTexts": 60, "volatile": list(volatile), "relative": RELATIVE_TIME.pattern}
    raw = await asyncio.wait_for(page.evaluate(page_script("extract"), args), timeout_s)
    masks = [page.locator(selector) for selector in (*MASKED, *mask)]
    png = await page.screenshot(type="png", timeout=timeout_s * 1000, mask=masks, mask_color=MASK_COLOR)
    elements = [_element(i + 1, e) for i, e in enumerate(raw["elements"])]
    return Observation(
        url=raw["url"],
        title=raw["title"],
        headings=raw["headings"],
        texts=raw["texts"],
        elements=elements,
        screenshot=png,
        som_screenshot=draw_som(png, elements),
        text=render_text(raw["url"], raw["title"], raw["headings"], elements),
        viewport=tuple(raw["viewport"]),
        scroll=tuple(raw["scroll"]),
        volatile=[tuple(box) for box in raw["volatile"]],
        overlays=[tuple(box) for box in raw["overlays"]],
    )


def _element(mark: int, e: dict) -> Element:
    frame = tuple(e["frame"])
    return Element(
        mark=mark,
        key=element_key(e["tag"], e["role"], e["name"], e["path"], frame),
        tag=e["tag"],
        role=e["role"],
        name=e["name"],
        value=e["value"],
        href=e["href"],
        input_type=e["input_type"],
        options=tuple(e["options"]),
        bbox=tuple(e["bbox"]),
        point=tuple(e["point"]),
        enabled=e["enabled"],
        submits=e["submits"],
        target=e["target"],
        method=e["method"],
        frame=frame,
        path=e["path"],
    )


@cache
def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def som_color(mark: int) -> tuple[int, int, int]:
    """The RGB color of mark `mark`'s box and label in the overlay."""
    hex_ = _PALETTE[mark % len(_PALETTE)]
    return tuple(int(hex_[i : i + 2], 16) for i in (1, 3, 5))


def draw_som(png: bytes, elements: list[Element]) -> bytes:
    """The screenshot with each element's box outlined and its mark number in a label."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(img)
    font = _font(12)
    for el in elements:
        color = som_color(el.mark)
        x, y, w, h = el.bbox
        draw.rectangle([x, y, x + w - 1, y + h - 1], outline=color, width=2)
        label = str(el.mark)
        tw = draw.textlength(label, font=font)
        lx, ly = max(0, x), max(0, y - 14) if y >= 14 else y
        draw.rectangle([lx, ly, lx + tw + 5, ly + 14], fill=color)
        draw.text((lx + 3, ly + 1), label, fill="white", font=font)
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=False, compress_level=1)
    return out.getvalue()


def render_text(url: str, title: str, headings: list[str], elements: list[Element]) -> str:
    """The compact element list a text model reads: one line per mark."""
    lines = [f"Page: {title or '(untitled)'} | {url}"]
    if headings:
        lines.append("Headings: " + " / ".join(headings[:6]))
    return "\n".join(lines + text_lines(url, elements))


def text_lines(url: str, elements: Sequence[Element]) -> list[str]:
    """The elements' lines of `render_text` on the page at `url` (same-site links shown without the origin)."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    return [_text_line(el, origin) for el in elements]


def _text_line(el: Element, origin: str) -> str:
    """One element's line (`origin`: the page's scheme and host, stripped from same-site links)."""
    line = f"[{el.mark}] {el.role}"
    if el.name:
        line += f' "{el.name}"'
    if el.role in ("combobox", "listbox") and el.options:
        line += f' = "{el.value}" options: ' + " | ".join(el.options[:8])
    elif el.value:
        line += f' value="{el.value}"'
    if el.href:
        href = el.href[len(origin) :] if el.href.startswith(origin) else el.href
        line += f" -> {href or '/'}"
    if not el.enabled:
        line += " (disabled)"
    if el.frame:
        line += " (in frame)"
    return line


def save_observation(obs: Observation, out_dir: str | Path) -> Path:
    """Write observation.json (the record, screenshots as file names), screenshot.png and som.png."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "screenshot.png").write_bytes(obs.screenshot)
    (out / "som.png").write_bytes(obs.som_screenshot)
    record = obs.model_dump(mode="json", exclude={"screenshot", "som_screenshot"})
    record.update(screenshot="screenshot.png", som_screenshot="som.png")
    (out / "observation.json").write_text(json.dumps(record, indent=2, ensure_ascii=False))
    return out
