"""The `report` flow: the self-contained HTML report of a run folder (not `flows/report.py`: Prefect loads a
deployment's entrypoint with its folder first on sys.path, where that name would hide the `report` package)."""

from __future__ import annotations

from prefect import flow, task


@task
def report_task(path: str) -> str:
    """The HTML report of a run folder (see report.build_report)."""
    from report import build_report

    return str(build_report(path))


@flow(name="report")
def report(path: str) -> str:
    """Write the run folder's HTML report; returns its path."""
    return report_task(path)
