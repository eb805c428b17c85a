"""Per-role counts of calls, answers written under the role's grammar (constrained decoding), repairs (a second,
stricter ask) and fallbacks (a recorded default)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RoleStats:
    """How often each role was asked, answered under its grammar, had to be asked again, and fell back."""

    calls: Counter = field(default_factory=Counter)
    constrained: Counter = field(default_factory=Counter)  # answers the backend held to the role's grammar
    repairs: Counter = field(default_factory=Counter)
    fallbacks: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, role: str, **counts: int) -> None:
        """Add to a role's counts (`calls=`, `constrained=`, `repairs=`, `fallbacks=`), atomically: SCALE's
        contexts share one RoleStats from their threads, and a Counter's `+=` is a read and a write."""
        with self._lock:
            for name, n in counts.items():
                getattr(self, name)[role] += n

    def fallback_rate(self, role: str) -> float:
        """Share of a role's calls that ended in the fallback."""
        return self.fallbacks[role] / self.calls[role] if self.calls[role] else 0.0

    def report(self) -> dict[str, dict[str, float]]:
        """Per role: calls, constrained answers, repairs, fallbacks and the fallback rate."""
        return {
            role: {
                "calls": self.calls[role],
                "constrained": self.constrained[role],
                "repairs": self.repairs[role],
                "fallbacks": self.fallbacks[role],
                "fallback_rate": round(self.fallback_rate(role), 3),
            }
            for role in sorted(self.calls)
        }


def merged_report(earlier: dict[str, dict[str, float]], now: dict[str, dict[str, float]]) -> dict[str, dict]:
    """Two reports added up (a resumed run: the parts before, and this one), fallback rates recomputed."""
    out = {}
    for role in sorted(set(earlier) | set(now)):
        counts = {k: int(earlier.get(role, {}).get(k, 0) + now.get(role, {}).get(k, 0)) for k in _COUNTS}
        rate = counts["fallbacks"] / counts["calls"] if counts["calls"] else 0.0
        out[role] = {**counts, "fallback_rate": round(rate, 3)}
    return out


_COUNTS = ("calls", "constrained", "repairs", "fallbacks")
