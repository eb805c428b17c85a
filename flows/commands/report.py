"""`scalehop report <run>`: one self-contained HTML page for a run folder or a folder of runs."""

from __future__ import annotations

import argparse


def _cmd_report(args: argparse.Namespace) -> int:
    from report import build_report

    target = build_report(args.run, args.out)
    print(f"report: {target.stat().st_size / 1e6:.1f} MB")
    print(target)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `report` verb."""
    p = sub.add_parser("report", help="one self-contained HTML page of a run folder or a folder of runs")
    p.add_argument("run", help="a run folder (with run.sqlite) or a folder holding run folders")
    p.add_argument("--out", help="the HTML file to write (default: <run>/report.html)")
    p.set_defaults(handler=_cmd_report)
