"""`scalehop judge audit RUN_DIR... [--labels FILE] [--json]`: check the Judger on your own site's runs."""

from __future__ import annotations

import argparse
import json
import sys

from explorer.errors import ScalehopError


def render(report, per_run) -> str:
    """The audit as a few readable lines (the JSON summary follows)."""
    lines = [f"judge {report.judge}: {report.transitions} real transitions in {len(report.runs)} run(s)"]
    lines.append(f"  true description accepted       {report.true_accept:7.1%}   (want >= 95%)")
    lines.append(f"  swapped description accepted    {report.swap_false_accept:7.1%}   of {report.swap_pairs} pairs")
    lines.append("  know-nothing answers accepted where wrong:")
    for name, rate in sorted(report.constants.items(), key=lambda kv: -kv[1]):
        lines.append(f"    {name:36s} {rate:7.1%}   of {report.constant_cases.get(name, 0)}")
    if report.labels:
        lab = report.labels
        lines.append(
            f"  labelled cases: {lab.cases}, agreement {lab.agreement:.1%}, "
            f"false positive {lab.false_positive:.1%}, false negative {lab.false_negative:.1%}"
        )
    for run, sub in per_run.items():
        lines.append(
            f"  {run}: {sub.transitions} transitions, true {sub.true_accept:.0%}, swap {sub.swap_false_accept:.0%}, "
            f"worst constant {sub.constant_false_accept:.0%}"
        )
    if report.failures:
        lines.append("  examples of what went wrong:")
        lines += [f"    {f}" for f in report.failures[:8]]
    return "\n".join(lines)


def _cmd_audit(args: argparse.Namespace) -> int:
    from explorer.audit import audit, load_run
    from explorer.labels import LabelledSet, score
    from explorer.models import Embedder

    runs = []
    for path in args.runs:
        try:
            runs.append(load_run(path))
        except ScalehopError as exc:
            raise ScalehopError(f"{path}: {exc}") from None
    if not any(r.cases for r in runs):
        raise ScalehopError("no judged transitions in these runs: audit SCALE runs (scalehop explore --strategy scale)")
    similarity = Embedder().similarity
    report = audit(runs, similarity, swaps=args.swaps, seed=args.seed)
    if args.labels:
        report.labels = score(LabelledSet.load(args.labels), similarity, args.split)
    per_run = {r.run: audit([r], similarity, swaps=args.swaps, seed=args.seed) for r in runs} if len(runs) > 1 else {}
    if not args.json:
        print(render(report, per_run))
    print(json.dumps(report.summary()))
    sys.stdout.flush()
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `judge` verb: `judge audit`."""
    judge = sub.add_parser("judge", help="check the Judger")
    verbs = judge.add_subparsers(dest="judge_command", required=True)
    p = verbs.add_parser("audit", help="can the Judger be fooled on these runs? (last line: a JSON summary)")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="SCALE run folders (with run.sqlite)")
    p.add_argument("--labels", help="a labelled-case file (see tests/data/judge_labels.json) to score agreement on")
    p.add_argument("--split", choices=["calibration", "report"], help="score only this split of --labels")
    p.add_argument("--swaps", type=int, default=10, help="swapped descriptions tried per transition")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print only the JSON summary")
    p.set_defaults(handler=_cmd_audit)
