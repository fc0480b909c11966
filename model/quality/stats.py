"""Pass rates with honest error bars: a corpus of a few dozen tests per type cannot tell 80 %
from 90 %, and the report should say so."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Two-sided 95 %.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    passed: int
    total: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def __str__(self) -> str:
        return (
            f"{100 * self.value:5.1f} % [{100 * self.low:5.1f}, {100 * self.high:5.1f}]"
            f"  ({self.passed}/{self.total})"
        )


def wilson(passed: int, total: int, z: float = Z95) -> Rate:
    """The Wilson score interval: sensible at 0 % and 100 % and for small totals, where the
    normal approximation gives intervals outside [0, 1] or of zero width."""
    if total <= 0:
        return Rate(0, 0, 0.0, 1.0)
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Rate(passed, total, max(0.0, centre - half), min(1.0, centre + half))
