"""Seed 004: which pages to re-fetch this period so the collection's total staleness stays smallest.

Page j's staleness s_j(t) is the number of whole periods since it was last fetched (or confirmed
fresh): 0 in the period after a fetch, one more for every period without. Minimising the staleness
summed over the horizon, less the time spent fetching (the paper's eq. 7), splits into independent
choices per period: at the start of period t, take the m pages with the largest

    (T − t) · s_j(t) − p_j · g_i(t)

p_j the page's size, g_i(t) its server's expected response time in that period, T the horizon. The
older a page the more its fetch is worth, the more of the horizon is left the more that weighs; the
cost term makes a large page on a slow server wait a little longer, so more pages fit in a period.

The units are the caller's: the crawler uses whole periods of CRAWL_STALENESS_PERIOD seconds, sizes in
KB and response times in seconds, so the cost is about the seconds a fetch occupies a worker.

`score` takes floats or numpy arrays alike, so the simulator ranks thousands of pages with the very
expression the database query reproduces (tests compare the two on random cases).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass


def score(staleness, remaining, size, response):
    """(T − t)·s_j(t) − p_j·g_i(t): `remaining` is T − t; the larger, the sooner the page is fetched."""
    return remaining * staleness - size * response


def periods_since(age_seconds: float, period_seconds: float) -> int:
    """s_j(t): whole periods elapsed since the last fetch (0 within the first period after it)."""
    return max(0, math.floor(age_seconds / period_seconds))


@dataclass(frozen=True)
class Candidate:
    """A Visited page as the scheduler sees it. `size` in KB, `response` in seconds (for the crawler)."""

    id: int
    staleness: int
    size: float
    response: float


def top_m(candidates: Iterable[Candidate], m: int, *, remaining: float) -> list[int]:
    """The reference selection: ids of the m candidates with the highest score, best first; ties go to
    the smaller id (the database query orders the same way)."""
    if m <= 0:
        return []
    best = heapq.nsmallest(m, candidates, key=lambda c: (-score(c.staleness, remaining, c.size, c.response), c.id))
    return [c.id for c in best]


def prune_age(threshold: float, *, remaining: float) -> int | None:
    """The least staleness a page needs to score at least `threshold` (costs are never negative, so
    score ≤ (T − t)·s). With the scores of any m or more candidates known, their m-th best is such a
    threshold for the m-th best overall, and younger pages need not be scored at all. None when
    nothing can be pruned."""
    if remaining <= 0 or not math.isfinite(threshold):
        return None
    # floor, not ceil: a threshold rounded up by a float error must not prune the page that meets it.
    return max(0, math.floor(threshold / remaining))
