"""Labelled sets on the bundled sites for the two judgements the loop rests on.

State identity: observation pairs (same state or not), and the error rates of an identity rule on them.
(The Judger's labelled cases are in tests/data/judge_labels.json: see explorer.labels.)

Pair specs are data (`configs/state_pairs.yaml`, `tests/thirdparty/state_pairs.yaml`); each side replays its
steps on a reset site (cookies cleared) and keeps the final observation. A false merge is a different-state
pair the rule calls one state; a false split is a same-state pair it calls two.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import yaml
from pydantic import BaseModel

from explorer.browser import BrowserSession, Chromium
from explorer.config import SiteConfig
from explorer.dedup import ssim, thumbnail
from explorer.identity import compare, of_observation
from explorer.records import Action, Observation


class PairSpec(BaseModel):
    """One labelled pair: two step lists on one site, and whether they end in the same state."""

    label: str
    site: str
    same: bool
    a: list[dict]
    b: list[dict]


@dataclass
class LabelledPair:
    """Two observations, their label and the site they come from."""

    label: str
    site: str
    same: bool
    a: Observation
    b: Observation


@asynccontextmanager
async def _sessions(chromium: Chromium, sites: dict[str, SiteConfig]) -> AsyncIterator[dict[str, BrowserSession]]:
    """One browser session per site, closed on exit."""
    sessions = {name: await chromium.new_session(site) for name, site in sites.items()}
    try:
        yield sessions
    finally:
        for session in sessions.values():
            await session.close()


def load_specs(path: str | Path = "configs/state_pairs.yaml") -> list[PairSpec]:
    """The pair specs of a YAML file."""
    return [PairSpec(**item) for item in yaml.safe_load(Path(path).read_text())]


async def capture(session: BrowserSession, steps: list[dict]) -> Observation:
    """Reset the site, run `steps`, and return the final observation.

    Steps: {goto: path under the site's root}, {reload: true}, {click|hover: element name},
    {fill: [element name, text]}, {enter: field name} (press Enter in it: submit its form), {wait: seconds}.
    """
    await session.reset()
    for step in steps:
        ((kind, arg),) = step.items()
        if kind == "wait":
            await asyncio.sleep(float(arg))
            continue
        if kind == "goto":
            outcome = await session.act(Action(kind="goto", url=urljoin(_root(session.site), arg)))
        elif kind == "reload":
            outcome = await session.act(Action(kind="goto", url=session.page.url))
        elif kind in ("click", "hover", "fill", "enter"):
            name, text = arg if kind == "fill" else (arg, "")
            obs = await session.observe()
            element = next((e for e in obs.elements if e.name == name), None)
            if element is None:
                raise ValueError(f"no element named {name!r} on {obs.url}")
            typed = {"text": text, "press_enter": kind == "enter"}
            action = Action.on(element, "type", **typed) if kind in ("fill", "enter") else Action.on(element, kind)
            outcome = await session.act(action, obs)
        else:
            raise ValueError(f"unknown step {kind!r}")
        if not outcome.ok:
            raise RuntimeError(f"step {step} failed: {outcome.error}")
    return await session.observe()


def _root(site: SiteConfig) -> str:
    """Where pair paths start: the site's origin root (the bundled sites' start URL is that root)."""
    parts = urlsplit(site.start_url)
    return f"{parts.scheme}://{parts.netloc}/"


async def build_pairs(chromium: Chromium, sites: dict[str, SiteConfig], specs: list[PairSpec]) -> list[LabelledPair]:
    """Capture both sides of every spec (one browser context per site, reset before each side); the sites are
    captured concurrently, the pairs come back in the specs' order."""

    async def site_pairs(session: BrowserSession, mine: list[PairSpec]) -> list[LabelledPair]:
        pairs = []
        for spec in mine:
            a, b = await capture(session, spec.a), await capture(session, spec.b)
            pairs.append(LabelledPair(spec.label, spec.site, spec.same, a, b))
        return pairs

    async with _sessions(chromium, sites) as sessions:
        names = sorted({spec.site for spec in specs})
        done = await asyncio.gather(*(site_pairs(sessions[n], [s for s in specs if s.site == n]) for n in names))
    by_label = {pair.label: pair for pairs in done for pair in pairs}
    return [by_label[spec.label] for spec in specs]


def error_rates(judged: list[tuple[bool, bool]]) -> tuple[float, float]:
    """(false-merge rate, false-split rate) over (labelled same, judged same) pairs."""
    different = [judged_same for same, judged_same in judged if not same]
    alike = [judged_same for same, judged_same in judged if same]
    return sum(different) / max(1, len(different)), sum(not j for j in alike) / max(1, len(alike))


def judge_pairs(pairs: list[LabelledPair], delta: float, rule: str = "identity") -> list[tuple[bool, bool]]:
    """(labelled same, judged same) for each pair under a rule, the URL test left out (as if one URL served both
    sides, the way a single-page app does): `identity` (structure, then canonical SSIM >= delta:
    explorer.identity) or `raw` (the seed's rule: SSIM of the raw screenshots >= delta)."""
    judged = []
    for pair in pairs:
        if rule == "raw":
            same = ssim(thumbnail(pair.a.screenshot), thumbnail(pair.b.screenshot)) >= delta
        else:
            same = compare(of_observation(pair.a, ""), of_observation(pair.b, ""), delta).same
        judged.append((pair.same, same))
    return judged
