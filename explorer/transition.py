"""The transition of an action: elements added, removed and changed (matched by key), URL, title,
dialog and tab changes, the screenshot SSIM (as state identity compares: typed values, focus rings and
relative times do not count), and a deterministic natural-language description."""

from __future__ import annotations

from urllib.parse import urlsplit

from explorer.dedup import normalize_url
from explorer.identity import of_observation, pixel_ssim
from explorer.records import ActionOutcome, Element, ElementBrief, ElementChange, Observation, Transition

MAX_LISTED = 4  # elements named per clause of the description; the rest are counted


def diff(before: Observation, after: Observation, outcome: ActionOutcome | None = None) -> Transition:
    """Compare two observations of the page around one action."""
    old = {e.key: e for e in before.elements}
    new = {e.key: e for e in after.elements}
    added = [_brief(e) for k, e in new.items() if k not in old]
    removed = [_brief(e) for k, e in old.items() if k not in new]
    changed = [c for k in old.keys() & new.keys() for c in _changes(old[k], new[k])]
    changed.sort(key=lambda c: after.elements.index(new[c.key]))
    transition = Transition(
        url_before=before.url,
        url_after=after.url,
        url_changed=normalize_url(before.url) != normalize_url(after.url),
        title_before=before.title,
        title_after=after.title,
        headings_after=after.headings[:3],
        added=added,
        removed=removed,
        changed=changed,
        texts_added=[t for t in after.texts if t not in set(before.texts)],
        texts_removed=[t for t in before.texts if t not in set(after.texts)],
        dialog=outcome.dialogs[0] if outcome and outcome.dialogs else None,
        new_tab=outcome.new_tab if outcome else None,
        error=outcome.error if outcome and not outcome.ok else None,
        ssim=round(pixel_ssim(of_observation(before, ""), of_observation(after, "")), 4),
        description="",
    )
    return transition.model_copy(update={"description": describe(transition)})


def _brief(e: Element) -> ElementBrief:
    return ElementBrief(key=e.key, role=e.role, name=e.name)


def _changes(a: Element, b: Element) -> list[ElementChange]:
    out = []
    for field in ("name", "value", "enabled"):
        va, vb = str(getattr(a, field)), str(getattr(b, field))
        if va != vb:
            out.append(ElementChange(key=b.key, role=b.role, name=b.name, field=field, before=va, after=vb))
    return out


def _path(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def describe(t: Transition) -> str:
    """One deterministic paragraph: what the action did, most important change first."""
    parts = []
    if t.error:
        parts.append(f"The action fails ({t.error[:120]}).")
    if t.dialog:
        parts.append(f'A dialog says "{t.dialog[:120]}".')
    if t.new_tab:
        parts.append(f"A new tab opens at {_path(t.new_tab)}.")
    if t.url_changed:
        parts.append(f'Navigates to "{t.title_after}" ({_path(t.url_after)}).')
        if t.headings_after:
            parts.append(f'Main heading: "{t.headings_after[0]}".')
        return " ".join(parts)
    if t.title_after != t.title_before:
        parts.append(f'The title becomes "{t.title_after}".')
    if t.added:
        parts.append(f"Appears: {_listing([e.describe() for e in t.added])}.")
    if len(t.removed) > 2 * MAX_LISTED:  # a modal or a rewritten region covers most of the page
        parts.append(f"{len(t.removed)} controls disappear, the page behind is covered or replaced.")
    elif t.removed:
        parts.append(f"Disappears: {_listing([e.describe() for e in t.removed])}.")
    if t.changed:
        changes = [f'{c.role} "{c.before if c.field == "name" else c.name}" {_verb(c)}' for c in t.changed]
        parts.append(f"Changes: {_listing(changes)}.")
    if t.texts_added:
        parts.append(f"Shows text: {_listing([repr_text(x) for x in t.texts_added])}.")
    elif t.texts_removed and not (t.added or t.removed or t.changed):
        parts.append(f"Hides text: {_listing([repr_text(x) for x in t.texts_removed])}.")
    if len(parts) == (1 if t.error else 0) + (1 if t.dialog else 0) + (1 if t.new_tab else 0):
        parts.append(
            "Nothing visible changes." if t.ssim >= 0.999 else "The page changes, but no control or text does."
        )
    return " ".join(parts)


def repr_text(text: str, limit: int = 60) -> str:
    """A quoted, shortened text block."""
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def _verb(c: ElementChange) -> str:
    if c.field == "name":
        return f'becomes "{c.after}"'
    if c.field == "enabled":
        return "becomes enabled" if c.after == "True" else "becomes disabled"
    return f'value becomes "{c.after}"' if c.after else "is cleared"


def outcome_reasoning(action_text: str, t: Transition) -> str:
    """r_t: a short, deterministic account of why the true outcome happened, for the training target."""
    if t.error:
        return f"{action_text} failed, so the page stayed as it was."
    if t.url_changed:
        return f'{action_text} leads to {_path(t.url_after)}, so the browser loads "{t.title_after}".'
    if t.dialog:
        return f"{action_text} runs a script that shows a dialog."
    if t.added and len(t.removed) > 2 * MAX_LISTED:
        return f"{action_text} opens a layer over the page with its own controls."
    if t.added or t.texts_added:
        return f"{action_text} reveals content that was hidden on this page."
    if t.removed or t.texts_removed:
        return f"{action_text} hides or removes part of this page."
    if t.changed:
        return f"{action_text} updates controls in place on this page."
    return f"{action_text} has no visible effect here."
