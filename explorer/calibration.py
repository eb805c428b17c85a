"""Labelled sets on the bundled sites for the two judgements the loop rests on.

State identity: screenshot pairs (same state or not) and the error rates of an SSIM threshold on them.
(The Judger's labelled cases are in tests/data/judge_labels.json: see explorer.labels.)

Pair specs are data (`configs/state_pairs.yaml`); each side replays its steps on a reset site (cookies
cleared) and keeps the final screenshot. A false merge is a different-state pair scored
>= delta; a false split is a same-state pair scored < delta.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel

from explorer.browser import BrowserSession, Chromium
from explorer.config import SiteConfig
from explorer.records import Action


class PairSpec(BaseModel):
    """One labelled pair: two step lists on one site, and whether they end in the same state."""

    label: str
    site: str
    same: bool
    a: list[dict]
    b: list[dict]


@dataclass
class LabelledPair:
    """Two screenshots (PNG) and their label."""

    label: str
    same: bool
    a: bytes
    b: bytes


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


async def capture(session: BrowserSession, steps: list[dict]) -> bytes:
    """Reset the site, run `steps`, and return the final viewport screenshot."""
    site = session.site
    await session.reset()
    for step in steps:
        ((kind, arg),) = step.items()
        if kind == "goto":
            outcome = await session.act(Action(kind="goto", url=site.start_url + arg))
        elif kind == "reload":
            outcome = await session.act(Action(kind="goto", url=session.page.url))
        elif kind in ("click", "hover"):
            obs = await session.observe()
            element = next((e for e in obs.elements if e.name == arg), None)
            if element is None:
                raise ValueError(f"no element named {arg!r} on {obs.url}")
            outcome = await session.act(Action.on(element, kind), obs)
        else:
            raise ValueError(f"unknown step {kind!r}")
        if not outcome.ok:
            raise RuntimeError(f"step {step} failed: {outcome.error}")
    return (await session.observe()).screenshot


async def build_pairs(chromium: Chromium, sites: dict[str, SiteConfig], specs: list[PairSpec]) -> list[LabelledPair]:
    """Capture both sides of every spec (one browser context per site, reset before each side)."""
    async with _sessions(chromium, sites) as sessions:
        pairs = []
        for spec in specs:
            session = sessions[spec.site]
            a, b = await capture(session, spec.a), await capture(session, spec.b)
            pairs.append(LabelledPair(spec.label, spec.same, a, b))
        return pairs


def error_rates(scored: list[tuple[bool, float]], delta: float) -> tuple[float, float]:
    """(false-merge rate, false-split rate) of threshold `delta` over (same, ssim) pairs."""
    different = [s for same, s in scored if not same]
    alike = [s for same, s in scored if same]
    merges = sum(s >= delta for s in different) / max(1, len(different))
    splits = sum(s < delta for s in alike) / max(1, len(alike))
    return merges, splits
