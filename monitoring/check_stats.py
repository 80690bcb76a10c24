"""The arithmetic of hourly rollups and of uptime over them: checks per category, latency figures.

Pure: no Django or Celery import; monitoring.services.history writes what these return, and
monitoring.selectors reads uptime back out of the stored rollups.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crawler.status import Category, Status

# A rollup's count columns, in CategoryCounts' order: the four categories, then the checks made inside
# a maintenance window.
COUNT_FIELDS = (*(c.value for c in Category), Status.MAINTENANCE.value)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (PostgreSQL's percentile_cont) of an ascending sequence."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


@dataclass(frozen=True)
class LatencyStats:
    count: int
    min_ms: float
    mean_ms: float
    p95_ms: float
    max_ms: float


def latency_stats(values: Iterable[float]) -> LatencyStats | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return LatencyStats(
        count=len(ordered),
        min_ms=ordered[0],
        mean_ms=sum(ordered) / len(ordered),
        p95_ms=percentile(ordered, 95),
        max_ms=ordered[-1],
    )


@dataclass
class CategoryCounts:
    normal: int = 0
    delay: int = 0
    disconnect: int = 0
    error: int = 0
    maintenance: int = 0  # checks inside a maintenance window: shown, but left out of uptime

    def add(self, other: CategoryCounts) -> None:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def counted(self) -> int:
        """Checks that count for uptime (maintenance excluded)."""
        return self.normal + self.delay + self.disconnect + self.error


@dataclass(frozen=True)
class Uptime:
    """Shares of the counted checks, in percent; None when there were none."""

    checks: int
    maintenance: int
    up: float | None  # normal + delay: the server answered as it should
    shares: dict[str, float | None] = field(default_factory=dict)


def uptime(counts: CategoryCounts) -> Uptime:
    """Uptime as the share of checks (checks come at a fixed interval, so a share of checks is a share
    of time) that were normal or delay; maintenance checks are in neither numerator nor denominator."""
    n = counts.counted
    shares = {c.value: (100.0 * getattr(counts, c.value) / n if n else None) for c in Category}
    up = 100.0 * (counts.normal + counts.delay) / n if n else None
    return Uptime(checks=n, maintenance=counts.maintenance, up=up, shares=shares)


@dataclass(frozen=True)
class CheckSample:
    """What a rollup needs of one raw check."""

    category: str
    status: int | None
    latency_ms: float
    in_maintenance: bool


def summarize(samples: Iterable[CheckSample]) -> tuple[CategoryCounts, LatencyStats | None]:
    """One hourly rollup: checks per category (maintenance apart) and the latency of answered checks.

    A disconnect's "latency" is how long we waited before giving up, not a response time, so only
    checks that got an HTTP response (outside maintenance) enter the latency figures.
    """
    counts = CategoryCounts()
    timed: list[float] = []
    for s in samples:
        if s.in_maintenance:
            counts.maintenance += 1
            continue
        setattr(counts, s.category, getattr(counts, s.category) + 1)
        if s.status is not None:
            timed.append(s.latency_ms)
    return counts, latency_stats(timed)
