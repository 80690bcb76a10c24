"""Time windows and schedules, the one rule for every kind of them (no Django): the windows a time falls in,
a cron expression's next start and the windows that a cron expression and a duration open.

Two kinds of window, one reading of each:
- a dated window (opens, closes), as maintenance is stored: `at` is inside when opens <= at < closes;
- a time of day "HH:MM-HH:MM", every day, as crawl jobs give them: read in the owner's time zone (an IANA
  name), "22:00-06:00" runs past midnight, "…-24:00" to the end of the day; no windows at all means always.

Cron expressions have five fields; one is accepted only when its next start can be computed ("0 0 31 2 *"
parses and never comes). croniter computes in the time zone of the time it is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter

DAY_WINDOW_RE = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*-\s*([01]?\d|2[0-4]):([0-5]\d)\s*$")
_END_OF_DAY = time(23, 59, 59, 999999)


class NeverComes(ValueError):
    """A cron expression whose next start cannot be computed."""


def zone_time(at: datetime, time_zone: str) -> datetime:
    """`at` (aware) as the clock of `time_zone` shows it."""
    return at.astimezone(ZoneInfo(time_zone))


def in_dated_windows(windows: Sequence[tuple[datetime, datetime]], at: datetime) -> bool:
    return any(opens <= at < closes for opens, closes in windows)


def day_window_bounds(window: str) -> tuple[time, time]:
    """(opens, closes) of a time-of-day window "HH:MM-HH:MM" (24:00 is the end of the day)."""
    m = DAY_WINDOW_RE.match(window)
    if m is None:
        raise ValueError(f'{window!r} is not a time window "HH:MM-HH:MM"')
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    return time(h1, m1), _END_OF_DAY if h2 == 24 else time(h2, m2)


def in_day_windows(windows: Sequence[str], at: datetime, time_zone: str) -> bool:
    """Whether `at` (aware), on the clock of `time_zone`, is inside one of the time-of-day windows (always,
    with none)."""
    if not windows:
        return True
    now = zone_time(at, time_zone).time().replace(tzinfo=None)
    for w in windows:
        opens, closes = day_window_bounds(w)
        if opens <= closes:
            if opens <= now < closes:
                return True
        elif now >= opens or now < closes:
            return True
    return False


def day_window_opens(windows: Sequence[str], at: datetime, time_zone: str) -> datetime | None:
    """The next whole minute after `at`, within a day, at which one of the windows is open (in
    `time_zone`); None when none opens in a day."""
    local = zone_time(at, time_zone).replace(second=0, microsecond=0)
    for minutes in range(1, 24 * 60 + 1):
        t = local + timedelta(minutes=minutes)
        if in_day_windows(windows, t, time_zone):
            return t
    return None


def cron_valid(text: str) -> bool:
    """Five fields that croniter reads (whether it ever comes is cron_next's to say)."""
    return len(text.split()) == 5 and croniter.is_valid(text)


def cron_next(expression: str, after: datetime) -> datetime:
    """The next start of the cron expression after `after`, in `after`'s time zone. NeverComes when there is
    none (a date that never exists)."""
    try:
        return croniter(expression, after).get_next(datetime)
    except (CroniterError, ValueError, KeyError, OverflowError) as exc:
        raise NeverComes(exc.__class__.__name__) from None


def cron_windows(
    expression: str, duration: timedelta, start: datetime, end: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """The windows (opens, closes) that the cron expression opens for `duration` and that overlap [start,
    end): including one that opened before `start` and is still open. In `start`'s time zone."""
    it = croniter(expression, start - duration)
    while True:
        opens = it.get_next(datetime)
        if opens >= end:
            return
        closes = opens + duration
        if closes > start:
            yield opens, closes
