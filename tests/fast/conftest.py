"""The fast tier's fixtures: no Chromium, no model, no training, no Prefect server.

`fixture_run` is a small SCALE run folder written without a browser: hand-made observations of a six-state shop
(PNG screenshots drawn with PIL) go through the engine's own writers, `StateTracker.commit` (nodes, edges, steps,
events, one transaction per step) and `Engine.record` (the ExploreRecords of `explorer/loop.py`, under the record
kinds the code uses), into a `RunStore`. `similarity` replaces tests/conftest.py's MiniLM embedder: the Judger cases
here are decided by its rules alone, so a call to it fails the test instead of loading a model.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image, ImageDraw

from explorer.config import ExploreConfig, SiteConfig
from explorer.graph import ExplorationGraph
from explorer.loop import Engine
from explorer.observe import draw_som, element_key, render_text
from explorer.records import Action, ActionOutcome, BrowserEvent, Element, Observation, Selection, Verdict
from explorer.roles import RULE_JUDGE, parse_prediction
from explorer.store import RunStore
from explorer.tracker import StateTracker
from explorer.transition import diff

ORIGIN = "http://shop.test"
VIEWPORT = (640, 400)
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
VERIFY_REASONING = "verification: a random action"  # what the engine tells the Predictor in verification
_TAGS = {"link": "a", "button": "button", "textbox": "input"}


SHORTLIST_WORDS = ("jacket", "boot", "cart", "search", "price", "sort", "kitchen", "tent", "home")


def word_embed(texts):
    """A stand-in for MiniLM in this tier: word counts over SHORTLIST_WORDS, L2-normalized."""
    rows = np.array([[t.lower().count(w) for w in SHORTLIST_WORDS] for t in texts], dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


@pytest.fixture(autouse=True)
def _no_minilm(monkeypatch):
    """The Actor's shortlist ranks element lines with MiniLM by default; this tier loads no model weights, so it
    ranks with `word_embed` (tests/test_actor.py runs the real one)."""
    monkeypatch.setattr("explorer.roles.shortlist.default_embed", lambda: word_embed)


def element(mark: int, role: str, name: str, href: str | None = None) -> Element:
    """An element as `observe` reports it: the mark-th control of the page's main column, keyed like `observe`."""
    tag, path = _TAGS[role], f"body > main > :nth-child({mark})"
    bbox = (40.0, 40.0 * mark, 160.0, 28.0)
    return Element(
        mark=mark,
        tag=tag,
        role=role,
        name=name,
        href=ORIGIN + href if href else None,
        bbox=bbox,
        point=(bbox[0] + 8, bbox[1] + 8),
        path=path,
        key=element_key(tag, role, name, path),
    )


def screenshot(color: tuple[int, int, int], elements: list[Element], modal: bool = False) -> bytes:
    """A PNG of the viewport: a page colour, a grey box per control, and a white dialog over it when `modal`."""
    image = Image.new("RGB", VIEWPORT, color)
    draw = ImageDraw.Draw(image)
    for el in elements:
        x, y, w, h = el.bbox
        draw.rectangle([x, y, x + w, y + h], fill=(120, 120, 120))
    if modal:
        draw.rectangle([200, 60, 600, 360], fill=(255, 255, 255), outline=(0, 0, 0), width=3)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def page(path: str, title: str, headings: list[str], elements: list[Element], color, texts=(), modal=False):
    """One observation as the browser would return it: screenshots, Set-of-Mark overlay and text form."""
    url = ORIGIN + path
    png = screenshot(color, [e for e in elements if e.name != "Close"], modal)
    return Observation(
        url=url,
        title=title,
        status=200,
        headings=headings,
        texts=list(texts),
        elements=elements,
        screenshot=png,
        som_screenshot=draw_som(png, elements),
        text=render_text(url, title, headings, elements),
        viewport=VIEWPORT,
    )


HOME_ELEMENTS = [
    element(1, "link", "Jackets", "/c/jackets"),
    element(2, "link", "Boots", "/c/boots"),
    element(3, "button", "Size guide"),
    element(4, "textbox", "Search"),
]
JACKETS_ELEMENTS = [
    element(1, "link", "Home", "/"),
    element(2, "link", "Rain jacket", "/p/1"),
    element(3, "link", "Sort by price", "/c/jackets?sort=price"),
]
HOME_HEADINGS = ["Tiny Shop", "Jackets", "Boots"]
PAGES = {
    "home": page("/", "Home · Tiny Shop", HOME_HEADINGS, HOME_ELEMENTS, (230, 240, 250), ["Free returns."]),
    "size chart": page(  # the same URL with the size guide's dialog open: another state
        "/",
        "Home · Tiny Shop",
        [*HOME_HEADINGS, "Size chart"],
        [*HOME_ELEMENTS, element(5, "button", "Close")],
        (230, 240, 250),
        ["Free returns.", "S fits a 86-91 cm chest."],
        modal=True,
    ),
    "jackets": page("/c/jackets", "Jackets · Tiny Shop", ["Jackets"], JACKETS_ELEMENTS, (250, 235, 215)),
    # sorted by price, the two-jacket list looks the same: a new URL (a new node) that is an alias of /c/jackets
    "jackets by price": page(
        "/c/jackets?sort=price", "Jackets · Tiny Shop", ["Jackets"], JACKETS_ELEMENTS, (250, 235, 215)
    ),
    "rain jacket": page(
        "/p/1",
        "Rain jacket · Tiny Shop",
        ["Rain jacket"],
        [element(1, "link", "Home", "/"), element(2, "button", "Add to cart")],
        (220, 250, 220),
    ),
    "boots": page(
        "/c/boots",
        "Boots · Tiny Shop",
        ["Boots"],
        [element(1, "link", "Home", "/"), element(2, "link", "Trail boot", "/p/2")],
        (245, 225, 245),
    ),
}


@dataclass(frozen=True)
class FixtureStep:
    """One browser action of the fixture run: from a page (None: a goto), on a control, to a page."""

    at: str | None
    target: str  # the control's name, or the page a goto loads
    reaches: str
    predicted: str | None = None  # the Predictor's OUTCOME line: this step is judged and keeps a record
    correct: bool = False  # the Judger's verdict on that prediction
    kind: str | None = None  # the step kind the engine passes (None: the tracker's default, a Selector pick)
    error: str | None = None
    events: tuple[tuple[str, str, str], ...] = ()  # (kind, detail, url) of browser events


# Nodes: n0 home, n1 jackets, n2 rain jacket, n3 jackets by price, n4 size chart, n5 boots.
# Records: failures at steps 1, 4, 6, 8, 9 (step 9 failed: no effect), understood at steps 2 and 7.
STEPS = [
    FixtureStep(None, "home", "home", kind="start"),  # 0
    FixtureStep("home", "Jackets", "jackets", 'Navigates to "Boots · Tiny Shop" (/c/boots).'),  # 1
    FixtureStep("jackets", "Rain jacket", "rain jacket", 'Navigates to "Rain jacket · Tiny Shop" (/p/1).', True),
    FixtureStep(None, "jackets", "jackets", kind="return"),  # 3
    FixtureStep("jackets", "Sort by price", "jackets by price", "Nothing visible changes."),  # 4
    FixtureStep(None, "home", "home", kind="return"),  # 5
    FixtureStep("home", "Size guide", "size chart", 'Navigates to "Size guide" (/info/sizes).'),  # 6
    FixtureStep("size chart", "Close", "home", 'Disappears: button "Close".', True, kind="verify"),  # 7
    FixtureStep(  # 8
        "home",
        "Boots",
        "boots",
        'Navigates to "Jackets · Tiny Shop" (/c/jackets).',
        events=(("blocked_request", "image", "http://cdn.elsewhere.test/boot.png"),),
    ),
    FixtureStep(  # 9
        "boots",
        "Home",
        "boots",
        'Navigates to "Home · Tiny Shop" (/).',
        error="Timeout 3000ms exceeded.",
        events=(("timeout", "action did not finish within 3000 ms", ORIGIN + "/c/boots"),),
    ),
]


@dataclass
class FixtureRun:
    """The run folder and what it was written with."""

    dir: Path
    site: SiteConfig
    failure_kind: str  # the record kind the engine gave wrong predictions (j=0)
    understood_kind: str  # ... and right ones (j=1)
    record_ids: dict[int, str]  # step -> id of its record


def _outcome(step: FixtureStep, action: Action, before: Observation | None, after: Observation) -> ActionOutcome:
    moved = before is None or before.url != after.url
    return ActionOutcome(
        action=action,
        ok=step.error is None,
        error=step.error,
        url_before=before.url if before else "about:blank",
        url_after=after.url,
        status=200,
        navigation="GET" if moved and step.error is None else None,
        events=[BrowserEvent(kind=k, detail=d, url=u) for k, d, u in step.events],
        seconds=0.4,
    )


def build_run(runs_dir: Path, run_id: str = "fixture-run") -> FixtureRun:
    """Write the fixture run into `runs_dir/run_id` through the tracker and the engine's record writer."""
    site = SiteConfig(name="tinyshop", start_url=ORIGIN + "/", reset_url=ORIGIN + "/__reset")
    cfg = ExploreConfig(max_steps=len(STEPS), verify_actions=1)
    meta = {"site": site.model_dump(mode="json"), "explore": cfg.model_dump(mode="json")}
    store = RunStore.create(runs_dir, run_id, meta)
    tracker = StateTracker(store, ExplorationGraph(), delta=cfg.delta)
    model = SimpleNamespace(model_id=MODEL_ID, adapter_id=None)
    engine = Engine(site, cfg, tracker, model, similarity=None, budget=None, run_id=run_id)
    kinds, record_ids, node = {}, {}, None
    for step in STEPS:
        before, after = (PAGES[step.at] if step.at else None), PAGES[step.reaches]
        if before is None:
            action, node = Action(kind="goto", url=after.url), None
        else:
            action = Action.on(next(e for e in before.elements if e.name == step.target))
        outcome = _outcome(step, action, before, after)
        options = {"kind": step.kind} if step.kind else {}
        if step.predicted is not None:
            reasoning = VERIFY_REASONING if step.kind == "verify" else f"I do not know where {step.target} leads."
            prediction = parse_prediction(f"OUTCOME: {step.predicted}\nREASON: the name says so")
            verdict = Verdict(correct=step.correct, score=float(step.correct), reason="fixture", judge=RULE_JUDGE)
            records = engine.record(
                node,
                before,
                Selection(action=action, reasoning=reasoning),
                prediction,
                diff(before, after, outcome),
                verdict,
            )
            kinds[step.correct] = records(node)[0][0]  # the kind the engine names it (whatever node is reached)
            options |= {"verdict": step.correct, "records": records}
        done = tracker.commit(action, outcome, after, node, **options)
        for rid in done.records:  # one record per judged step
            record_ids[done.step] = rid
        if step.kind == "verify" and step.correct:
            store.put_nodes([tracker.graph.mark(node, "verified")])
        node = done.node_id
    store.set_meta("tokens", 1234)
    store.set_meta("seconds", 12.5)
    store.close()
    return FixtureRun(store.dir, site, kinds[False], kinds[True], record_ids)


@pytest.fixture(scope="session")
def fixture_run(tmp_path_factory) -> FixtureRun:
    """The fixture run, written once per session under `<tmp>/runs/fixture-run` (tests only read it)."""
    return build_run(tmp_path_factory.mktemp("fast") / "runs")


@pytest.fixture(scope="session")
def similarity():
    """Stands in for the MiniLM similarity of tests/conftest.py: the fast tier's Judger cases are decided by rules,
    so consulting the embedder fails the test (such a case belongs in tests/test_judger.py)."""

    def refuse(a: str, b: str) -> float:
        raise AssertionError(f"the Judger consulted the embedder ({a!r} vs {b!r}): not a rule-decided case")

    return refuse
