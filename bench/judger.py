"""Judger calibration on the labelled cases of configs/judge_cases.yaml (real transitions of the bundled
sites, predictions right and wrong): agreement, false-positive and false-negative rates of each judger.
The `llm` judger uses the embedded SmolLM2 (a strong backend is what it is meant for)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common import print_table  # noqa: E402
from explorer import BrowserConfig, Chromium, SiteConfig  # noqa: E402
from explorer.calibration import agreement, load_judge_cases, record_transitions  # noqa: E402
from explorer.models import Embedder, ModelConfig, load_model  # noqa: E402
from explorer.roles import RoleStats, acted_name, llm_verdict, parse_prediction, rule_verdict  # noqa: E402
from sites import serve_sites  # noqa: E402


async def transitions(cases):
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        sites = {n: SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in servers.urls.items()}
        async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites.values()]) as chromium:
            return await record_transitions(chromium, sites, cases)
    finally:
        servers.stop()


def main() -> None:
    cases = load_judge_cases()
    recorded = asyncio.run(transitions(cases))
    similarity = Embedder().similarity
    model = load_model(ModelConfig())
    labels, rows, judged = [c.correct for c in cases], [], {"rule": [], "llm (SmolLM2-135M)": []}
    seconds = {k: 0.0 for k in judged}
    stats_llm, inputs = RoleStats(), []
    for case in cases:
        action, transition = recorded[(case.site, case.path, case.click)]
        prediction = parse_prediction(f"OUTCOME: {case.prediction}")
        inputs.append((prediction, transition, acted_name(action)))
        t0 = time.perf_counter()
        judged["rule"].append(rule_verdict(prediction, transition, similarity, acted_name(action)).correct)
        t1 = time.perf_counter()
        judged["llm (SmolLM2-135M)"].append(
            llm_verdict(model, action, prediction, transition, similarity, stats_llm).correct
        )
        seconds["rule"] += t1 - t0
        seconds["llm (SmolLM2-135M)"] += time.perf_counter() - t1
    for name, verdicts in judged.items():
        stats = agreement(labels, verdicts)
        rows.append(
            [
                name,
                stats["cases"],
                f"{stats['agreement']:.1%}",
                f"{stats['false_positive']:.1%}",
                f"{stats['false_negative']:.1%}",
                f"{seconds[name] / len(cases) * 1000:.0f}",
            ]
        )
    print(f"{sum(labels)} right and {len(labels) - sum(labels)} wrong predictions of {len(recorded)} real actions")
    print_table(["judger", "cases", "agreement", "false positive", "false negative", "ms/case"], rows)
    print(f"llm judger output that did not parse (fell back to the rule): {stats_llm.fallbacks['judger']}/{len(cases)}")
    sweep = []
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7):
        verdicts = [rule_verdict(p, t, similarity, n, change_threshold=threshold).correct for p, t, n in inputs]
        stats = agreement(labels, verdicts)
        sweep.append(
            [threshold, f"{stats['agreement']:.1%}", f"{stats['false_positive']:.1%}", f"{stats['false_negative']:.1%}"]
        )
    print("\nrule judger, change-similarity threshold sweep (default CHANGE_THRESHOLD)")
    print_table(["threshold", "agreement", "false positive", "false negative"], sweep)
    for case, verdict in zip(cases, judged["rule"], strict=True):
        if verdict != case.correct:
            print(
                f"  rule disagrees: [{case.site}/{case.path} {case.click}] {case.prediction!r} labelled {case.correct}"
            )


if __name__ == "__main__":
    main()
