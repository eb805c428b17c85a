"""Judger calibration on the labelled set tests/data/judge_labels.json (real transitions of the bundled sites and
of a third-party app; the runs' own model answers labelled by a person, paraphrases, near misses, hedges and
adversarial answers): agreement, false-positive and false-negative rates per split and category, the
similarity-threshold sweep on the calibration split only, and the `llm` judger (embedded SmolLM2) beside the rule.

    .venv/bin/python bench/judger.py [--labels FILE] [--llm-cases N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/datasets.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common import print_table  # noqa: E402
from explorer.audit import agreement  # noqa: E402
from explorer.labels import LabelledSet, judge_cases  # noqa: E402
from explorer.models import Embedder, ModelConfig, load_model  # noqa: E402
from explorer.records import Action  # noqa: E402
from explorer.roles import RoleStats, llm_verdict, parse_prediction  # noqa: E402

LABELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "judge_labels.json"


def _row(name: str, labels: list[bool], judged: list[bool]) -> list:
    stats = agreement(labels, judged)
    right = sum(labels)
    return [
        name,
        stats.cases,
        f"{right}/{stats.cases - right}",
        f"{stats.agreement:.1%}",
        f"{stats.false_positive:.1%}",
        f"{stats.false_negative:.1%}",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--labels", type=Path, default=LABELS)
    p.add_argument("--llm-cases", type=int, default=60, help="report-split cases the llm judger is run on")
    args = p.parse_args()
    labelled = LabelledSet.load(args.labels)
    similarity = Embedder().similarity
    header = ["set", "cases", "right/wrong", "agreement", "false positive", "false negative"]

    t0 = time.perf_counter()
    rows, disagreements = [], []
    for split in ("calibration", "report"):
        cases, judged = judge_cases(labelled, similarity, split)
        rows.append(_row(f"{split} split (all)", [c.correct for c in cases], judged))
        by_cat = defaultdict(lambda: ([], []))
        by_site = defaultdict(lambda: ([], []))
        for case, verdict in zip(cases, judged, strict=True):
            for group in (by_cat[case.category], by_site[labelled.sources[case.source].site]):
                group[0].append(case.correct)
                group[1].append(verdict)
            if split == "report" and verdict != case.correct:
                disagreements.append(case)
        rows += [_row(f"  {split}: {cat}", *by_cat[cat]) for cat in sorted(by_cat)]
        rows += [_row(f"  {split}: site {site}", *by_site[site]) for site in sorted(by_site)]
    seconds = time.perf_counter() - t0
    per_case = seconds / len(labelled.cases) * 1e3
    print(f"rule judger (rule-v2) on {len(labelled.cases)} labelled cases, {per_case:.1f} ms/case")
    print_table(header, rows)

    sweep = []
    for threshold in (0.4, 0.5, 0.6, 0.7, 0.8):
        cases, judged = judge_cases(labelled, similarity, "calibration", change_threshold=threshold)
        sweep.append(_row(f"change_threshold {threshold}", [c.correct for c in cases], judged))
    for recall in (0.4, 0.5, 0.6, 0.8, 1.0):
        cases, judged = judge_cases(labelled, similarity, "calibration", title_recall=recall)
        sweep.append(_row(f"title_recall {recall}", [c.correct for c in cases], judged))
    print("\nthreshold sweep, calibration split only (defaults: change_threshold 0.6, title_recall 0.6)")
    print_table(header, sweep)

    if args.llm_cases:
        model, stats = load_model(ModelConfig()), RoleStats()
        report = [c for c in labelled.cases if c.split == "report"][: args.llm_cases]
        judged = []
        for case in report:
            prediction = parse_prediction(f"OUTCOME: {case.prediction}")
            action = Action(kind="click", label=f'element "{case.acted}"')
            verdict = llm_verdict(
                model, action, prediction, case.transition, similarity, stats, labelled.pages(case.source)
            )
            judged.append(verdict.correct)
        print(f"\nllm judger (SmolLM2-135M, adapter off) on the first {len(report)} report cases")
        print_table(header, [_row("llm", [c.correct for c in report], judged)])
        print(f"llm output that did not parse (fell back to the rule): {stats.fallbacks['judger']}/{len(report)}")

    print(f"\nrule disagrees with the label on {len(disagreements)} report-split cases:")
    for case in disagreements:
        print(f"  [{case.id}] labelled {'right' if case.correct else 'wrong'}: {case.prediction[:90]!r}")
        print(f"      truth: {case.transition.description[:110]}")


if __name__ == "__main__":
    main()
