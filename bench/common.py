"""Helpers shared by the benchmarks: percentiles and a plain-text table."""

from __future__ import annotations

import statistics


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values`, nearest-rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    """The median of `values`."""
    return statistics.median(values)


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """Print rows under headers, columns right-aligned to their widest cell."""
    cells = [[str(h) for h in headers]] + [[f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for i, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def spread(values: list[float], digits: int = 3, signed: bool = False, sample: bool = False) -> str:
    """`mean ± sd` of `values` ('-' when none): the population sd, or the sample sd with `sample` (0 for one value)."""
    if not values:
        return "-"
    sd = statistics.stdev(values) if sample and len(values) > 1 else statistics.pstdev(values)
    return f"{statistics.fmean(values):{'+' if signed else ''}.{digits}f} ± {sd:.{digits}f}"
