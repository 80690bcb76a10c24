"""Uptime over a period from the status timeline, the pure part of the monthly SLA report.

Time, not check counts: a server is down from the confirmed change into disconnect or error to the
confirmed change out of it (the timeline's rows), so an outage's length is what it was however often the
server was checked. Maintenance windows are cut out of both the down time and the time counted; the time
before a server's first confirmed status (unknown) is not counted either.

An incident is one run of bad statuses (disconnect and error in a row are one incident) that overlaps the
period outside maintenance; its length is what of it falls inside the period.

No Django or Celery import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from crawler.status import BAD, Status

Interval = tuple[datetime, datetime]


@dataclass(frozen=True)
class PeriodUptime:
    counted_s: float  # time with a known status, outside maintenance
    downtime_s: float
    incidents: int
    longest_incident_s: float
    maintenance_s: float  # maintenance inside the period (left out of the figures)

    @property
    def uptime_percent(self) -> float | None:
        if self.counted_s <= 0:
            return None
        return 100.0 * (self.counted_s - self.downtime_s) / self.counted_s


def _merge(intervals: Sequence[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _outside(span: Interval, holes: Sequence[Interval]) -> float:
    """Seconds of `span` outside the (merged) `holes`."""
    start, end = span
    total = max(0.0, (end - start).total_seconds())
    for s, e in holes:
        lo, hi = max(s, start), min(e, end)
        if hi > lo:
            total -= (hi - lo).total_seconds()
    return max(0.0, total)


def period_uptime(
    *,
    start: datetime,
    end: datetime,
    status_before: str,
    changes: Sequence[tuple[datetime, str]],
    maintenance: Sequence[Interval] = (),
) -> PeriodUptime:
    """Figures of [start, end): `status_before` is the confirmed status at `start`, `changes` the timeline's
    (at, to_status) inside the period in time order, `maintenance` the windows overlapping it."""
    holes = _merge([(max(s, start), min(e, end)) for s, e in maintenance if e > start and s < end])
    segments: list[tuple[datetime, datetime, str]] = []
    at, status = start, status_before
    for when, to in changes:
        when = min(max(when, start), end)
        if when > at:
            segments.append((at, when, status))
        at, status = max(at, when), to
    if end > at:
        segments.append((at, end, status))
    bad = {s.value for s in BAD}
    counted = down = longest = 0.0
    incidents = 0
    run: float | None = None  # seconds of the current bad run so far (outside maintenance)
    for s, e, status in segments:
        seconds = _outside((s, e), holes)
        if status != Status.UNKNOWN.value:
            counted += seconds
        if status in bad:
            down += seconds
            run = (run or 0.0) + seconds
        elif run is not None:
            incidents, longest, run = incidents + (run > 0), max(longest, run), None
    if run is not None:
        incidents, longest = incidents + (run > 0), max(longest, run)
    maint = sum((e - s).total_seconds() for s, e in holes)
    return PeriodUptime(counted, down, incidents, longest, maint)
