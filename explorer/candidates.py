"""What an explorer may act on in an observation, and a plausible action on each element: shared by the SCALE
engine, its roles and the baseline strategies."""

from __future__ import annotations

import random
import re

from explorer.config import SiteConfig
from explorer.records import Action, Element, Observation
from explorer.safety import forbidden_reason, in_scope

CLICKABLE = ("link", "button", "tab", "menuitem", "checkbox", "radio", "switch", "option")  # roles a click works
_WORDS = ["shoes", "lamp", "red", "camera", "bike", "hello", "garden", "2", "music", "blue"]
_WORD = re.compile(r"[A-Za-z]{4,}")
# words of a page's links and headings that name the site's chrome rather than its content
_CHROME = frozenset(
    "home next previous prev back more view show sign login logout register account cart search help about contact"
    " page pages menu close open skip main content privacy terms cookies settings profile your with from this that"
    " their there what which when where here these have will into over also just than then them they".split()
)


def usable_elements(obs: Observation, site: SiteConfig) -> list[Element]:
    """Elements an explorer may actuate: enabled, allowed by the policy, links inside the scope."""
    return [
        el
        for el in obs.elements
        if el.enabled
        and forbidden_reason(el, site.policy) is None
        and (el.href is None or in_scope(el.href, site.allowed_origins))
    ]


def is_text_field(element: Element) -> bool:
    """A field that takes typed text: a textbox or searchbox that is not a checkbox or radio."""
    return element.role in ("textbox", "searchbox") and element.input_type not in ("checkbox", "radio")


def search_words(obs: Observation) -> list[str]:
    """Content words of a page's link names and headings (lowercased, in page order, once each): what a search
    field of the same site has results for, unlike a fixed word list."""
    names = [el.name for el in obs.elements if el.role == "link"] + list(obs.headings)
    words = (w.lower() for name in names for w in _WORD.findall(name))
    return list(dict.fromkeys(w for w in words if w not in _CHROME))


def action_for(element: Element, rng: random.Random, obs: Observation | None = None) -> Action:
    """A plausible action on an element: type into text fields (a search field gets a word of the page `obs`,
    when given), pick an option in selects, else click."""
    if is_text_field(element):
        searching = element.role == "searchbox"
        words = (search_words(obs) if obs is not None and searching else None) or _WORDS
        text = rng.choice(words) if element.input_type != "email" else "tester@example.org"
        return Action.on(element, "type", text=text, press_enter=searching)
    if element.role in ("combobox", "listbox") and element.options:
        return Action.on(element, "select", option=rng.choice(element.options))
    return Action.on(element, "click")
