"""MONITOR_RETRIES (seed 002's retry count): a disconnect or delay is tried again within its round,
against real servers on loopback that drop, stall or slow down their first k connections."""

from __future__ import annotations

import pytest
from django.test import override_settings

from crawlcore.models import StatusCheck
from crawler.http import FailureKind
from monitoring.models import ServerMonitor, StatusChange
from monitoring.server_list import parse_server_row
from monitoring.services.checks import monitors_check
from monitoring.services.servers import servers_import
from testweb.monitor import failing_first

FAST = {"CRAWL_CONNECT_TIMEOUT": 1.0, "CRAWL_HEADER_TIMEOUT": 0.4, "CRAWL_BODY_TIMEOUT": 1.0}


def import_urls(*urls: str, **kw) -> list[int]:
    rows = []
    for url in urls:
        r = parse_server_row([url])
        rows.append(type(r)(**{**r.__dict__, **kw}))
    return servers_import(trusted=True, rows=rows).server_ids


def only_check(url: str) -> StatusCheck:
    return StatusCheck.objects.get(requested_url=url)


@pytest.mark.parametrize("how", ["drop", "stall"])
@override_settings(**FAST, MONITOR_RETRIES=3)
def test_first_failures_are_retried_within_the_round_and_counted_once(db, how):
    with failing_first("127.0.0.191", k=2, how=how) as server:
        [sid] = import_urls(server.url)
        [checked] = monitors_check(server_ids=[sid], claim=False)
    assert server.connections == 3  # two failed tries, the third answered
    assert (checked.category, checked.tries, checked.result.status) == ("normal", 3, 200)
    row = only_check(server.url)  # one row for the round, not one per try
    assert (row.category, row.tries, row.status_code, row.failure_kind) == ("normal", 3, 200, "")
    assert ServerMonitor.objects.get(server_id=sid).status == "normal"


@override_settings(**FAST, MONITOR_RETRIES=3)
def test_a_delay_is_retried_and_the_round_counts_the_good_answer(db):
    with failing_first("127.0.0.192", k=1, how="slow", slow_s=0.3) as server:
        [sid] = import_urls(server.url, delay_threshold_s=0.2)
        monitors_check(server_ids=[sid], claim=False)
    assert server.connections == 2
    row = only_check(server.url)
    assert (row.category, row.tries) == ("normal", 2)


@override_settings(**FAST, MONITOR_RETRIES=0)
def test_no_retries_when_the_setting_is_zero(db):
    with failing_first("127.0.0.193", k=1, how="drop") as server:
        [sid] = import_urls(server.url)
        monitors_check(server_ids=[sid], claim=False)
    assert server.connections == 1
    row = only_check(server.url)
    assert (row.category, row.tries, row.failure_kind) == ("disconnect", 1, FailureKind.RESET.value)


@override_settings(**FAST, MONITOR_RETRIES=3)
def test_a_server_that_always_fails_is_recorded_failed_after_all_tries_without_holding_up_the_others(db):
    with (
        failing_first("127.0.0.194", k=None, how="stall") as stalls,
        failing_first("127.0.0.195", k=None, how="drop") as drops,
        failing_first("127.0.0.196", k=0) as good,
    ):
        ids = import_urls(stalls.url, drops.url, good.url)
        checked = monitors_check(server_ids=ids, claim=False)
        accepted = (stalls.connections, drops.connections, good.connections)
    assert accepted == (4, 4, 1)  # 1 + MONITOR_RETRIES tries of each failing server, one of the good one
    by_url = {c.result.url: c for c in checked}
    assert by_url[stalls.url].result.failure is FailureKind.HEADER_TIMEOUT
    assert by_url[drops.url].result.failure is FailureKind.RESET
    rows = {r.requested_url: r for r in StatusCheck.objects.all()}
    assert len(rows) == 3 == StatusCheck.objects.count()
    assert [(rows[u].category, rows[u].tries) for u in (stalls.url, drops.url, good.url)] == [
        ("disconnect", 4),
        ("disconnect", 4),
        ("normal", 1),
    ]
    # The good server was written first, in its own transaction, before the retries began.
    assert rows[good.url].id < min(rows[stalls.url].id, rows[drops.url].id)
    assert ServerMonitor.objects.get(server_id=ids[2]).status == "normal"


@override_settings(**FAST, MONITOR_RETRIES=3)
def test_failing_servers_are_retried_together_not_one_after_the_other(db):
    with (
        failing_first("127.0.0.197", k=None, how="stall") as a,
        failing_first("127.0.0.198", k=None, how="stall") as b,
    ):
        monitors_check(server_ids=import_urls(a.url, b.url), claim=False)
        times_a, times_b = list(a.accepted_at), list(b.accepted_at)
    assert len(times_a) == len(times_b) == 4
    # Each try of one starts before the next try of the other: the retries run side by side.
    for i in range(3):
        assert times_a[i] < times_b[i + 1] and times_b[i] < times_a[i + 1]


@override_settings(**FAST, MONITOR_RETRIES=3, MONITOR_FAIL_AFTER=2)
def test_retries_happen_inside_a_round_and_the_confirmation_counts_rounds(db):
    with failing_first("127.0.0.199", k=None, how="drop") as server:
        [sid] = import_urls(server.url)
        monitors_check(server_ids=[sid], claim=False)
        assert not StatusChange.objects.filter(server_id=sid).exists()  # 4 failed tries are one failed check
        monitors_check(server_ids=[sid], claim=False)
        assert server.connections == 8
    change = StatusChange.objects.get(server_id=sid)
    assert (change.from_status, change.to_status) == ("unknown", "disconnect")
    assert "2 checks in a row" in change.reason


@override_settings(**FAST, MONITOR_RETRIES=3, CRAWL_TASK_BUDGET=1.0)
def test_no_new_try_starts_once_the_round_has_used_its_task_budget(db):
    with failing_first("127.0.0.190", k=None, how="stall") as server:
        [sid] = import_urls(server.url)
        monitors_check(server_ids=[sid], claim=False)
    row = only_check(server.url)
    # Tries of 0.4 s each: the budget of 1 s leaves room for two or three, never the four asked for.
    assert row.category == "disconnect" and 1 <= row.tries < 4 and server.connections == row.tries
