"""JSON conversion of report figures and intervals."""
from __future__ import annotations

import math
from typing import Any


def num(x: Any) -> float | None:
    """A JSON float (None for NaN / inf / missing)."""
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) or math.isinf(value) else value


def interval(low: Any, high: Any) -> list[float | None]:
    return [num(low), num(high)]


def ci_of(ci: Any) -> list[float | None]:
    """[low, high] of a `metrics.core.intervals.CI` (or anything with `low` / `high`)."""
    return interval(ci.low, ci.high)


def sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
