"""Compact page context for role prompts: a page summary and an element's neighbourhood, not the whole page."""

from __future__ import annotations

from urllib.parse import urlsplit

from explorer.records import Element, Observation


def element_line(el: Element) -> str:
    """`[12] button "Add to cart"` plus a short value or link target."""
    line = f'[{el.mark}] {el.role} "{el.name[:60]}"' if el.name else f"[{el.mark}] {el.role}"
    if el.href:
        line += f" -> {urlsplit(el.href).path or '/'}"
    elif el.value and el.role not in ("button", "link"):
        line += f' = "{el.value[:30]}"'
    return line


def page_summary(obs: Observation) -> str:
    """Title, path and the first headings of the page."""
    parts = urlsplit(obs.url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f'Page: "{obs.title}" ({path})']
    if obs.headings:
        lines.append("Headings: " + " / ".join(h[:60] for h in obs.headings[:2]))
    return "\n".join(lines)


def neighbourhood(obs: Observation, target: Element, radius: int = 3) -> str:
    """The target and the elements listed just before and after it, the target marked with `>`."""
    i = next((k for k, e in enumerate(obs.elements) if e.mark == target.mark), 0)
    window = obs.elements[max(0, i - radius) : i + radius + 1]
    return "\n".join(("> " if e.mark == target.mark else "  ") + element_line(e) for e in window)
