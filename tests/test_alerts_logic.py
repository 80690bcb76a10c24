"""Alerts, the pure part: event kinds of changes, routing, grouped messages, back-off, keys."""

from __future__ import annotations

import pytest

from alerts.destinations import DestinationError, destination_parse
from alerts.logic import (
    EventView,
    KindsError,
    Route,
    event_kind,
    idempotency_key,
    kinds_parse,
    message_compose,
    retry_delay,
    routes_match,
)


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ("normal", "disconnect", "down"),
        ("unknown", "error", "down"),
        ("delay", "error", "down"),
        ("disconnect", "error", None),  # still down: nothing new to tell
        ("error", "normal", "up"),
        ("disconnect", "delay", "up"),
        ("normal", "delay", "delay"),
        ("delay", "normal", "up"),
        ("unknown", "normal", None),
    ],
)
def test_event_kind_of_a_confirmed_change(before, after, kind):
    assert event_kind(before, after) == kind


def test_kinds_parse_defaults_to_all_and_refuses_unknown_names():
    assert kinds_parse("") == ("down", "up", "delay", "cert", "content", "domain", "beat")
    assert kinds_parse(" UP, down ") == ("down", "up")
    with pytest.raises(KindsError, match="unknown event kind recovered"):
        kinds_parse("down,recovered")


def test_routes_by_all_group_and_server_each_channel_once():
    routes = [
        Route(1, frozenset({"down"})),
        Route(2, frozenset({"down", "up"}), group="campus"),
        Route(3, frozenset({"up"}), server_id=7),
        Route(2, frozenset({"down"}), server_id=7),
    ]
    assert routes_match(routes, kind="down", server_id=7, group="campus") == [1, 2]
    assert routes_match(routes, kind="up", server_id=7, group="lab") == [3]
    assert routes_match(routes, kind="delay", server_id=7, group="campus") == []


def view(i: int, kind: str = "down", group: str = "campus") -> EventView:
    return EventView(i, kind, f"http://s{i}.example", group, f"2026-03-02T10:00:{i:02d}+00:00", "normal", "error")


def test_many_changes_are_one_message_naming_the_largest_group_first():
    events = [view(i) for i in range(12)] + [view(20, "up", "lab")]
    m = message_compose(events, key="k")
    assert m.title == "[crawladmin] 12 servers down in group campus; http://s20.example recovered"
    assert m.body.count("\n- ") == 13  # every event on its own line, under its kind's heading
    assert "- http://s3.example: normal -> error" in m.body
    long = message_compose([view(i) for i in range(60)], key="k")
    assert "- ... and 10 more" in long.body


def test_idempotency_key_depends_on_the_rows_not_their_order():
    assert idempotency_key(1, [3, 1, 2]) == idempotency_key(1, [1, 2, 3])
    assert idempotency_key(1, [1, 2]) != idempotency_key(2, [1, 2]) != idempotency_key(1, [1])


def test_retry_delay_doubles_up_to_the_cap():
    assert [retry_delay(n, base_s=30, cap_s=200) for n in (1, 2, 3, 4)] == [30, 60, 120, 200]


def test_destination_parse_names_what_is_wrong():
    assert destination_parse("a@x.org, b@y.org").url == "email:a@x.org,b@y.org"
    assert destination_parse("json://127.0.0.1:8000/hook").kind == "apprise"
    with pytest.raises(DestinationError, match="the destination is empty"):
        destination_parse("  ")
    with pytest.raises(DestinationError, match="'foo://' is not a notification service"):
        destination_parse("foo://bar")
    with pytest.raises(DestinationError, match="not an e-mail address"):
        destination_parse("email:ops")


def test_weekly_shorthand_and_cron_give_the_windows_in_a_range():
    from datetime import UTC, datetime, timedelta

    from alerts.recurrence import ScheduleError, cron_of, occurrences

    assert cron_of("Sun 02:00") == "0 2 * * 0"
    assert cron_of("mon,thu 22:30") == "30 22 * * 1,4"
    monday = datetime(2026, 3, 2, tzinfo=UTC)
    week = list(occurrences("mon,thu 22:30", timedelta(hours=2), monday, monday + timedelta(days=7)))
    assert week == [
        (datetime(2026, 3, 2, 22, 30, tzinfo=UTC), datetime(2026, 3, 3, 0, 30, tzinfo=UTC)),
        (datetime(2026, 3, 5, 22, 30, tzinfo=UTC), datetime(2026, 3, 6, 0, 30, tzinfo=UTC)),
    ]
    # A window already open at the start of the range is part of it.
    open_now = list(occurrences("0 23 * * *", timedelta(hours=2), monday, monday + timedelta(hours=1)))
    assert open_now == [(datetime(2026, 3, 1, 23, tzinfo=UTC), datetime(2026, 3, 2, 1, tzinfo=UTC))]
    with pytest.raises(ScheduleError, match="unknown day sonday"):
        cron_of("sonday 02:00")
    with pytest.raises(ScheduleError, match="neither a 5-field cron expression"):
        cron_of("every sunday")
    with pytest.raises(ScheduleError, match="at most 7 days"):
        list(occurrences("0 2 * * 0", timedelta(days=8), monday, monday))


def test_a_maintenance_schedule_that_never_comes_is_refused_and_never_stops_the_others():
    from datetime import UTC, datetime, timedelta

    from alerts.recurrence import ScheduleError, cron_of, occurrences

    with pytest.raises(ScheduleError, match="never"):
        cron_of("0 0 31 2 *")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ScheduleError):
        list(occurrences("0 0 30 2 *", timedelta(hours=1), start, start + timedelta(days=2)))


@pytest.mark.django_db
def test_one_maintenance_schedule_that_never_comes_does_not_stop_the_others_windows():
    from datetime import UTC, datetime

    from alerts.models import MaintenanceSchedule
    from alerts.services.maintenance_windows import maintenance_windows_write
    from crawlcore.models import Server
    from monitoring.models import MaintenanceWindow

    server = Server.objects.create(scheme="http", host="a.example", port=80)
    MaintenanceSchedule.objects.bulk_create([  # written past the checks (bulk_create skips clean)
        MaintenanceSchedule(server=server, schedule="0 0 31 2 *", duration_minutes=60),
        MaintenanceSchedule(server=server, schedule="0 2 * * *", duration_minutes=60),
    ])  # fmt: skip
    assert maintenance_windows_write(now=datetime(2026, 1, 1, tzinfo=UTC)) == 2
    assert MaintenanceWindow.objects.filter(server=server).count() == 2
