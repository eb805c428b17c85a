"""The deterministic template generator: task text from titles, headings, element names and transitions.

No model is needed; the same run always gives the same text. The model generator starts from this text
and falls back to it.
"""

from __future__ import annotations

import re

from explorer.records import Action, Element, Observation, Transition
from explorer.roles.actor import SHOWN_TEXTS

_TITLE_SEPARATORS = re.compile(r"\s+[·|–—-]\s+")
_FIELD_ROLES = ("textbox", "searchbox", "combobox", "spinbutton", "listbox")
MAX_NAME_WORDS = 8
_PRICE = re.compile(r"^(?:[$€£]\s?\d[\d,]*(?:\.\d\d)?|\d[\d,]*(?:\.\d\d)?\s?(?:€|EUR|USD|GBP))$")
_LABELED = re.compile(r"^([A-Z][a-z]*(?: [a-z&/-]+){0,2}):\s+([^\"]{1,60}?)$")  # "Color: Forest green"
_COUNT = re.compile(r"^(\d[\d,]*)\s+([a-z]{3,20}s)$")  # "10 products"
_SEARCH = re.compile(r"\bsearch\b", re.IGNORECASE)
MAX_FACT_WORDS = 6
_SPEAKER = {"i", "we", "you", "he", "she", "they", "it", "this", "that", "my", "our", "your"}  # a sentence starts so


def short_title(title: str) -> str:
    """The page's own part of a title ("Footwear · Northwind Outfitters" -> "Footwear")."""
    parts = [p for p in _TITLE_SEPARATORS.split(title.strip()) if p]
    return parts[0] if parts else title.strip()


def page_name(obs: Observation | None, title: str) -> str:
    """How a task names a page: its main heading when it has one, else the short title."""
    if obs is not None and obs.headings and obs.headings[0].strip():
        return obs.headings[0].strip()
    return short_title(title) or "this page"


def element_name(element: Element | None, action: Action) -> str:
    """A short name of the acted-on element: a select's option list and long link texts trimmed."""
    name = element.name if element is not None else _label_name(action.label)
    if element is not None and element.options:
        tail = " ".join(element.options)
        if name.endswith(tail):
            name = name[: -len(tail)]
        else:  # names are trimmed: drop from the first option on
            first = name.find(element.options[0])
            name = name[:first] if first > 0 else name
    words = name.split()
    return " ".join(words[:MAX_NAME_WORDS]) or (element.role if element is not None else "the control")


def _label_name(label: str) -> str:
    m = re.search(r'"(.*)"', label)
    return m.group(1) if m else label


def intent(action: Action, element: Element | None) -> str:
    """The user's intent behind one action, e.g. `choose "Cascade Co." in the Brand menu`."""
    name = element_name(element, action)
    match action.kind:
        case "type" if searches(action, element):
            return f'search for "{action.text or ""}"'
        case "type":
            return f'enter "{action.text or ""}" in the {name} field'
        case "select":
            return f'choose "{action.option or ""}" in the {name} menu'
        case "hover":
            return f'point at "{name}"'
        case "scroll":
            return f"scroll {action.direction or 'down'}"
        case _:
            return f'click "{name}"'


def searches(action: Action, element: Element | None) -> bool:
    """Is the action a search: text typed and submitted in a search field (a searchbox, or a field named so)?"""
    if action.kind != "type" or not action.press_enter:
        return False
    role, name = (element.role, element.name) if element is not None else ("", action.label)
    return role == "searchbox" or bool(_SEARCH.search(name))


def has_effect(t: Transition) -> bool:
    """Did the action do something visible and not fail?"""
    if t.error:
        return False
    return bool(t.url_changed or t.added or t.removed or t.changed or t.texts_added or t.texts_removed or t.dialog)


def single_step_instruction(action: Action, element: Element | None, t: Transition, after: Observation | None) -> str:
    """What a user would ask for, given what the action really did."""
    if t.url_changed and action.kind == "click":
        return f'Open the "{page_name(after, t.title_after)}" page.'
    return _sentence(intent(action, element))


def step_reasoning(page: str, action: Action, element: Element | None, outcome: str, goal: str | None = None) -> str:
    """Why this action is the next one: where we are, what it does, and (in a path) what it leads to."""
    aim = f' To reach "{goal}",' if goal else ""
    return f'The page "{page}" shows {action.label or action.kind}.{aim} I {intent(action, element)}: {outcome}'


def path_instruction(goal: str, actions: list[tuple[Action, Element | None]], navigates: list[bool]) -> str:
    """The goal of a path: open the goal page (or search, when a search loaded it), then any in-page changes made
    after the last page load."""
    last_nav = max((i for i, nav in enumerate(navigates) if nav), default=-1)
    tail = [intent(a, e) for a, e in actions[last_nav + 1 :]]
    if last_nav >= 0 and searches(*actions[last_nav]):
        text = _sentence(intent(*actions[last_nav])).removesuffix(".")
    else:
        text = f'Open the "{goal}" page' if last_nav >= 0 else f"On this page, {tail.pop(0)}"
    for part in tail:
        text += f", then {part}"
    return text + "."


def page_questions(obs: Observation) -> list[tuple[str, str, str]]:
    """(kind, question, answer) pairs about a page's own content."""
    pairs = [("title", "What is the title of this page?", obs.title.strip())]
    heading = obs.headings[0].strip() if obs.headings else ""
    if heading:
        pairs.append(("heading", "What is the main heading on this page?", heading))
    sections = [h.strip() for h in obs.headings[1:7] if h.strip()]
    if len(sections) >= 2:
        pairs.append(("sections", "Which sections or items are listed under the main heading?", ", ".join(sections)))
    fields = [element_name(e, Action(kind="click")) for e in obs.elements if e.role in _FIELD_ROLES]
    if fields:
        pairs.append(("fields", "Which form fields can be filled in on this page?", ", ".join(dict.fromkeys(fields))))
    return [p for p in pairs if p[2]]


def page_facts(page: str, obs: Observation) -> list[tuple[str, str]]:
    """(question, answer) pairs about facts the page `obs` states in its first text blocks (the ones the Actor
    reads, `SHOWN_TEXTS`), each question naming the page as `page`, one answer per question:
    - its price, when the block right after the page's main heading is a price and the page shows no other
      (`$45.95` under "Timber Cooler"; a list of products names each product before its price);
    - each short `Label: value` block (`What is the color of "Timber Cooler"?`: a label of one to three words, a
      value of at most MAX_FACT_WORDS words that is not a sentence and has no double quote);
    - a count (`12 products`)."""
    shown = [t.strip() for t in obs.texts[:SHOWN_TEXTS]]
    heading = obs.headings[0].strip() if obs.headings else None
    prices = {t.strip() for t in obs.texts if _PRICE.match(t.strip())}
    after = {shown[i + 1] for i in range(len(shown) - 1) if shown[i] == heading}
    facts = [(f'What is the price of "{page}"?', p) for p in prices if len(prices) == 1 and p in after]
    for text in shown:
        m = _LABELED.match(text)
        if m and _value(m.group(2)):
            facts.append((f'What is the {m.group(1).lower()} of "{page}"?', m.group(2).strip()))
        elif m := _COUNT.match(text):
            facts.append((f'How many {m.group(2)} does "{page}" show?', m.group(1)))
    first: dict[str, str] = {}
    for question, answer in facts:
        first.setdefault(question, answer)
    return list(first.items())


def _value(text: str) -> bool:
    """Is `text` a short value (`Forest green`), not a sentence (`I agree with this.`)?"""
    words = text.split()
    return len(words) <= MAX_FACT_WORDS and not text.endswith((".", "!", "?")) and words[0].lower() not in _SPEAKER


def outcome_question(action: Action, element: Element | None) -> str:
    """The question of an outcome pair: what does this action do here?"""
    return f"What happens when you {intent(action, element)} on this page?"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")
