"""The HTML report of run folders: coverage curves, the SCALE-Hop graph, failure samples, improve rounds and
dataset stats on one self-contained page (`build_report`)."""

from report.html import IMAGE_WIDTH, REPORT_NAME, ReportError, build_report, find_runs

__all__ = ["IMAGE_WIDTH", "REPORT_NAME", "ReportError", "build_report", "find_runs"]
