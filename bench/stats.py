"""Latency summaries: nearest-rank percentiles, in milliseconds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

PERCENTILES = (50, 95, 99)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty sequence."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summary(seconds: Sequence[float]) -> dict[str, Any]:
    """n, p50/p95/p99/max and mean in ms; an empty sample gives n=0 and None for the rest."""
    if not seconds:
        return {"n": 0, **{f"p{p}": None for p in PERCENTILES}, "max": None, "mean": None}
    ms = sorted(s * 1000 for s in seconds)
    out: dict[str, Any] = {"n": len(ms)}
    for p in PERCENTILES:
        out[f"p{p}"] = round(percentile(ms, p), 3)
    out["max"] = round(ms[-1], 3)
    out["mean"] = round(sum(ms) / len(ms), 3)
    return out


def ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base <= 0:
        return None
    return round(value / base, 2)
