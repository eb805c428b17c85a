"""What an explorer may act on in an observation, and a plausible action on each element: shared by the SCALE
engine, its roles and the baseline strategies."""

from __future__ import annotations

import random

from explorer.config import SiteConfig
from explorer.records import Action, Element, Observation
from explorer.safety import forbidden_reason, in_scope

CLICKABLE = ("link", "button", "tab", "menuitem", "checkbox", "radio", "switch", "option")  # roles a click works
_WORDS = ["shoes", "lamp", "red", "camera", "bike", "hello", "garden", "2", "music", "blue"]


def usable_elements(obs: Observation, site: SiteConfig) -> list[Element]:
    """Elements an explorer may actuate: enabled, allowed by the policy, links inside the scope."""
    return [
        el
        for el in obs.elements
        if el.enabled
        and forbidden_reason(el, site.policy) is None
        and (el.href is None or in_scope(el.href, site.allowed_origins))
    ]


def action_for(element: Element, rng: random.Random) -> Action:
    """A plausible action on an element: type into text fields, pick an option in selects, else click."""
    if element.role in ("textbox", "searchbox") and element.input_type not in ("checkbox", "radio"):
        text = rng.choice(_WORDS) if element.input_type != "email" else "tester@example.org"
        return Action.on(element, "type", text=text, press_enter=element.role == "searchbox")
    if element.role in ("combobox", "listbox") and element.options:
        return Action.on(element, "select", option=rng.choice(element.options))
    return Action.on(element, "click")
