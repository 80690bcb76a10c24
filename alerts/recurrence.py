"""Recurring maintenance windows, the pure part: a schedule is a cron expression (or a weekly shorthand
such as ``sun 02:00``) and a duration; ``occurrences`` lists the windows it opens in a time range.

No Django import; crawler.windows reads cron expressions and opens their windows (in UTC, as every time
here is), as it does for crawl jobs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from crawler.windows import NeverComes, cron_next, cron_valid, cron_windows

DAYS = {"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 0}
_WEEKLY = re.compile(r"^(?P<days>[a-z]+(?:,[a-z]+)*)\s+(?P<h>\d{1,2}):(?P<m>\d{2})$")
MAX_DURATION = timedelta(days=7)


class ScheduleError(ValueError):
    pass


def cron_of(spec: str) -> str:
    """A cron expression from ``spec``: a cron expression as is, or ``"sun 02:00"`` / ``"mon,thu 22:30"``
    (weekly at that UTC time). Raises ScheduleError naming what is wrong."""
    text = " ".join(spec.strip().lower().split())
    weekly = _WEEKLY.match(text)
    if weekly:
        days = weekly["days"].split(",")
        unknown = [d for d in days if d not in DAYS]
        hour, minute = int(weekly["h"]), int(weekly["m"])
        if unknown:
            raise ScheduleError(f"unknown day {', '.join(unknown)}; days are {', '.join(DAYS)}")
        if hour > 23 or minute > 59:
            raise ScheduleError(f"{weekly['h']}:{weekly['m']} is not a time of day")
        return f"{minute} {hour} * * {','.join(str(DAYS[d]) for d in days)}"
    if not cron_valid(text):
        raise ScheduleError(f"{spec!r} is neither a 5-field cron expression nor a weekly time like 'sun 02:00'")
    try:  # parsed is not enough: "0 0 31 2 *" parses and never comes
        cron_next(text, datetime(2000, 1, 1, tzinfo=UTC))
    except NeverComes:
        raise ScheduleError(f"{spec!r} never comes (no such date)") from None
    return text


def occurrences(spec: str, duration: timedelta, start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
    """The windows (opens, closes) of this schedule that overlap [start, end): including one that opened
    before `start` and is still open."""
    if not timedelta(0) < duration <= MAX_DURATION:
        raise ScheduleError("a maintenance window lasts more than 0 and at most 7 days")
    yield from cron_windows(cron_of(spec), duration, start, end)
