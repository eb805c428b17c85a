"""`scalehop step`: one full SCALE step on a page, for debugging prompts and models on a site.

Selector (or a given mark) -> Predictor -> execute -> Transition -> Judger.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Literal

from pydantic import BaseModel

from explorer.browser import Chromium
from explorer.candidates import action_for, usable_elements
from explorer.config import BrowserConfig, SiteConfig
from explorer.errors import ScalehopError
from explorer.models import Embedder, ModelConfig, load_model
from explorer.records import Prediction, Selection, Transition, Verdict
from explorer.roles import RoleStats, acted_name, llm_verdict, predict, rank_candidates, rule_verdict, select
from explorer.transition import diff


class StepReport(BaseModel):
    """Everything one step saw and decided."""

    url: str
    selection: Selection
    prediction: Prediction
    transition: Transition
    verdict: Verdict
    roles: dict
    usage: dict


async def run_step(
    site: SiteConfig,
    browser: BrowserConfig,
    model_config: ModelConfig,
    *,
    mark: int | None = None,
    judge: Literal["rule", "llm"] = "rule",
    seed: int = 0,
) -> StepReport:
    """Open the site, choose (or take) an element, predict, act, diff and judge."""
    model = load_model(model_config)
    similarity = Embedder().similarity
    stats, rng = RoleStats(), random.Random(seed)
    async with await Chromium.launch(browser, site.allowed_origins) as chromium:
        session = await chromium.new_session(site)
        await session.start()
        before = await session.observe()
        candidates = usable_elements(before, site)
        if mark is not None:
            element = before.element(mark)
            if element is None or element not in candidates:
                raise ScalehopError(f"mark {mark} is not a usable element of {before.url}: see `scalehop observe`")
            selection = Selection(action=action_for(element, rng, before), reasoning="chosen by the user")
        else:
            if not candidates:
                raise ScalehopError(f"{before.url} has no usable element to act on")
            selection = select(model, before, rank_candidates(candidates, Counter(), rng), [], rng, stats)
        target = before.element(selection.action.mark)
        prediction = predict(model, before, selection.action, target, selection.reasoning, stats)
        outcome = await session.act(selection.action, before)
        after = await session.observe()
        await session.close()
    transition = diff(before, after, outcome)
    if judge == "llm":
        verdict = llm_verdict(model, selection.action, prediction, transition, similarity, stats)
    else:
        verdict = rule_verdict(prediction, transition, similarity, acted_name(selection.action))
    return StepReport(
        url=before.url,
        selection=selection,
        prediction=prediction,
        transition=transition,
        verdict=verdict,
        roles=stats.report(),
        usage=model.usage_report(),
    )


def render(report: StepReport) -> str:
    """The report as readable text."""
    s, p, t, v = report.selection, report.prediction, report.transition, report.verdict
    return "\n".join(
        [
            f"page:       {report.url}",
            f"selector:   {s.action.describe()}" + ("  [fallback]" if s.fallback else ""),
            f"  because:  {s.reasoning}",
            f"predictor:  {p.change}" + ("  [fallback]" if p.fallback else ""),
            f"  because:  {p.reasoning or '-'}",
            f"truth:      {t.description}",
            f"judger:     {'correct (j=1)' if v.correct else 'wrong (j=0): a cognitive boundary'}"
            f"  score {v.score}  [{v.judge}] {v.reason}",
        ]
    )
