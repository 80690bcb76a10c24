"""crawler.windows: the one reading of time windows and cron schedules that maintenance and crawl jobs share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crawler.windows import (
    NeverComes,
    cron_next,
    cron_valid,
    cron_windows,
    day_window_bounds,
    day_window_opens,
    in_dated_windows,
    in_day_windows,
)


def test_a_dated_window_holds_its_start_and_not_its_end():
    opens = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
    windows = [(opens, opens + timedelta(hours=1))]
    assert in_dated_windows(windows, opens)
    assert in_dated_windows(windows, opens + timedelta(minutes=59))
    assert not in_dated_windows(windows, opens + timedelta(hours=1))
    assert not in_dated_windows([], opens)


def test_a_time_of_day_window_is_read_on_the_owners_clock():
    # 23:30 UTC is 08:30 the next morning in Seoul (UTC+9): inside a Seoul office-hours window, outside a
    # night window, and the other way round in UTC.
    at = datetime(2026, 1, 1, 23, 30, tzinfo=UTC)
    assert in_day_windows(["08:00-18:00"], at, "Asia/Seoul")
    assert not in_day_windows(["22:00-06:00"], at, "Asia/Seoul")
    assert in_day_windows(["22:00-06:00"], at, "UTC")
    assert not in_day_windows(["08:00-18:00"], at, "UTC")


def test_a_window_to_24_00_runs_to_the_end_of_the_day():
    assert day_window_bounds("18:00-24:00")[1].hour == 23
    assert in_day_windows(["18:00-24:00"], datetime(2026, 1, 1, 23, 59, 59, tzinfo=UTC), "UTC")
    with pytest.raises(ValueError):
        day_window_bounds("25:00-26:00")


def test_the_next_opening_is_the_next_whole_minute_inside_on_the_zones_clock():
    at = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)  # 21:00:30 in Seoul
    opens = day_window_opens(["22:00-06:00"], at, "Asia/Seoul")
    assert opens is not None and opens.astimezone(UTC) == datetime(2026, 1, 1, 13, 0, tzinfo=UTC)
    assert day_window_opens(["22:00-22:00"], at, "UTC") is None  # empty: never opens


def test_cron_needs_five_fields_and_a_next_start():
    assert cron_valid("0 2 * * *")
    assert not cron_valid("0 2 * *")
    assert not cron_valid("every sunday")
    assert cron_next("0 2 * * *", datetime(2026, 1, 1, 3, 0, tzinfo=UTC)) == datetime(2026, 1, 2, 2, 0, tzinfo=UTC)
    with pytest.raises(NeverComes):
        cron_next("0 0 31 2 *", datetime(2026, 1, 1, tzinfo=UTC))


def test_cron_windows_include_one_still_open_at_the_start():
    start = datetime(2026, 1, 5, 0, 30, tzinfo=UTC)
    got = list(cron_windows("0 23 * * *", timedelta(hours=2), start, start + timedelta(days=1)))
    assert got == [
        (datetime(2026, 1, 4, 23, 0, tzinfo=UTC), datetime(2026, 1, 5, 1, 0, tzinfo=UTC)),
        (datetime(2026, 1, 5, 23, 0, tzinfo=UTC), datetime(2026, 1, 6, 1, 0, tzinfo=UTC)),
    ]
