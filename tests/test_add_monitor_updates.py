"""add_monitor names one monitor: run again it updates that monitor (a heartbeat by its name, any other kind
by its target or name), changes only what it is given, says exactly what changed, and a new interval takes
effect at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from monitoring.models import ServerMonitor


def add(capsys, *args: str) -> str:
    call_command("add_monitor", *args)
    return capsys.readouterr().out.strip().splitlines()[0]


def test_a_heartbeat_added_twice_is_one_monitor_and_the_second_run_says_unchanged(db, capsys):
    first = add(capsys, "heartbeat", "nightly backup", "--every", "86400", "--grace", "3600")
    assert first.startswith("added heartbeat monitor nightly backup")
    token = ServerMonitor.objects.get().ping_token
    again = add(capsys, "heartbeat", "nightly backup", "--every", "86400", "--grace", "3600")
    assert again == "unchanged monitor nightly backup"
    assert ServerMonitor.objects.count() == 1 and ServerMonitor.objects.get().ping_token == token
    assert add(capsys, "heartbeat", "nightly backup") == "unchanged monitor nightly backup"  # nothing given


def test_a_heartbeat_given_a_new_period_says_what_changed(db, capsys):
    add(capsys, "heartbeat", "nightly backup", "--every", "86400", "--grace", "3600")
    line = add(capsys, "heartbeat", "nightly backup", "--every", "43200")
    assert line == "changed monitor nightly backup: period_s 86400 -> 43200"
    m = ServerMonitor.objects.get()
    assert (m.period_s, m.grace_s) == (43200.0, 3600.0)


def test_an_http_monitor_called_again_keeps_its_name_interval_and_health_path(db, capsys):
    add(capsys, "http", "http://www.uni-test.org/health", "--name", "Uni web", "--every", "120", "--group", "web")
    m = ServerMonitor.objects.get()
    assert (m.name, m.interval_s, m.health_url) == ("Uni web", 120.0, "http://www.uni-test.org/health")
    assert add(capsys, "http", "www.uni-test.org") == "unchanged monitor Uni web"
    m.refresh_from_db()
    assert (m.name, m.interval_s, m.health_url, m.server.group) == (
        "Uni web", 120.0, "http://www.uni-test.org/health", "web"
    )  # fmt: skip
    line = add(capsys, "http", "www.uni-test.org", "--every", "60", "--group", "campus")
    assert line == "changed monitor Uni web: interval_s 120 -> 60, group web -> campus"


def test_a_tcp_monitor_found_by_its_target_or_refused_when_its_name_is_taken(db, capsys):
    add(capsys, "tcp", "db.uni-test.org:5432", "--name", "Database")
    assert add(capsys, "tcp", "db.uni-test.org:5432") == "unchanged monitor Database"
    assert add(capsys, "tcp", "db.uni-test.org:5432", "--name", "Main DB") == (
        "changed monitor Main DB: name Database -> Main DB"
    )
    with pytest.raises(CommandError, match="a tcp monitor named 'Main DB' already watches db.uni-test.org:5432"):
        call_command("add_monitor", "tcp", "db2.uni-test.org:5432", "--name", "Main DB")
    assert ServerMonitor.objects.count() == 1


def test_a_shorter_interval_reschedules_the_next_check_at_once(db, capsys):
    add(capsys, "tcp", "db.uni-test.org:5432", "--every", "3600")
    now = timezone.now()
    ServerMonitor.objects.update(last_check_at=now, next_check_at=now + timedelta(seconds=3600))
    add(capsys, "tcp", "db.uni-test.org:5432", "--every", "30")
    m = ServerMonitor.objects.get()
    assert m.next_check_at <= now + timedelta(seconds=30)
