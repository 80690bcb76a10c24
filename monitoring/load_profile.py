"""A server's 24-hour load profile (seed 000): its mean response time by hour of day, which the
load-aware server order reads.

Pure: no Django or Celery import.
"""

from __future__ import annotations

from collections.abc import Iterable


def load_profile(rows: Iterable[tuple[int, int, float]]) -> list[float | None]:
    """The 24-hour load profile: mean response time (ms) per hour of day.

    ``rows``: (hour of day 0-23, number of timed checks, their mean latency in ms), one per hourly
    rollup. Each hour's value is the check-weighted mean over all its rollups; None with no data.
    """
    weight = [0] * 24
    total = [0.0] * 24
    for hour, count, mean_ms in rows:
        if count > 0:
            weight[hour] += count
            total[hour] += count * mean_ms
    return [total[h] / weight[h] if weight[h] else None for h in range(24)]
