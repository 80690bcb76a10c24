"""Monitoring against the database (SQLite) and the local test web: categories of real checks, the
confirmation rule as stored, maintenance, rollups, uptime, load profiles, pruning and claims."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from crawlcore.models import Server, StatusCheck
from crawler.http import FailureKind, FetchResult, Timings
from monitoring.accepted_codes import AcceptedCodes
from monitoring.models import HourlyRollup, MaintenanceWindow, ServerMonitor, StatusChange
from monitoring.selectors import server_load_profile, server_shown_status, uptime_counts, uptime_of
from monitoring.server_list import ServerRow
from monitoring.services.check_dispatch import monitors_dispatch_due
from monitoring.services.checks import Checked, Target, checks_record, monitors_check, monitors_claim
from monitoring.services.history import history_prune, load_profiles_build, rollups_build
from monitoring.services.servers import servers_import
from testweb import SiteSpec, TestWebServer
from testweb.monitor import refusing_url, scripted

FAST = {"CRAWL_CONNECT_TIMEOUT": 1.0, "CRAWL_HEADER_TIMEOUT": 0.5, "CRAWL_BODY_TIMEOUT": 2.0}
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def server_timeline(*, server_id: int) -> list[StatusChange]:
    return list(StatusChange.objects.filter(server_id=server_id).order_by("at", "id"))


def server_uptime(*, server_id: int, now):
    return uptime_of(uptime_counts(server_ids=[server_id], now=now).get(server_id))


def row(url: str, **kw) -> ServerRow:
    from monitoring.server_list import parse_server_row

    r = parse_server_row([url])
    return ServerRow(**{**r.__dict__, **kw})


def add_server(host: str = "127.0.0.250", port: int = 80, **kw) -> int:
    return servers_import(trusted=True, rows=[row(f"http://{host}:{port}/", **kw)]).server_ids[0]


@pytest.fixture(scope="module")
def web():
    spec = SiteSpec(n_servers=1, pages_per_server=3, first_octet=170, slow_delay=0.3)
    with TestWebServer(spec) as tw, scripted("127.0.0.180", [500]) as erroring:
        yield tw, erroring


@override_settings(**FAST, CRAWLER_NUM=7)
def test_categories_of_fast_slow_silent_refusing_and_erroring_servers(db, web):
    tw, erroring = web
    w = tw.web
    urls = {
        "fast": w.url(w.normal_hosts()[0], "/"),
        "slow": w.url(w.slow_host, "/"),
        "silent": w.url(w.silent_host, "/"),
        "refusing": refusing_url("127.0.0.181"),
        "erroring": erroring.url,
    }
    rows = [row(u, delay_threshold_s=0.15 if name == "slow" else None) for name, u in urls.items()]
    ids = servers_import(trusted=True, rows=rows).server_ids
    checked = {c.result.url: c for c in monitors_check(server_ids=ids, claim=False)}
    category = {name: checked[u].category for name, u in urls.items()}
    assert category == {
        "fast": "normal",
        "slow": "delay",
        "silent": "disconnect",
        "refusing": "disconnect",
        "erroring": "error",
    }
    assert checked[urls["silent"]].result.failure is FailureKind.HEADER_TIMEOUT
    assert checked[urls["refusing"]].result.failure is FailureKind.REFUSED

    fast = StatusCheck.objects.get(requested_url=urls["fast"])
    assert (fast.agent, fast.crawler_num, fast.status_code) == ("monitor", 7, 200)
    assert fast.bytes > 0 and fast.detail == "HTTP 200"
    # Every check is a fresh connection, so all four phases are measured.
    assert None not in (fast.dns_ms, fast.connect_ms, fast.first_byte_ms, fast.body_ms)
    slow = StatusCheck.objects.get(requested_url=urls["slow"])
    assert slow.first_byte_ms >= 250  # the 0.3 s wait is the server's time to first byte
    assert StatusCheck.objects.count() == 5
    # The first good check confirms at once (M=1); one failure confirms nothing yet (N=2).
    status = dict(ServerMonitor.objects.values_list("server__host", "status"))
    assert status[w.normal_hosts()[0]] == "normal" and status[w.slow_host] == "delay"
    assert status[w.silent_host] == "unknown" and status["127.0.0.180"] == "unknown"


def fake(server_id: int, status: int | None, at: datetime, *, fail_after=2, recover_after=1) -> Checked:
    failure = None if status else FailureKind.REFUSED
    result = FetchResult(
        "http://x/", "GET", status, {}, b"", failure, "", False, 0, Timings(0.1, 0.2, 0.3, 0.1, 12.0), None
    )
    target = Target(server_id, "http://x/", True, 300.0, 3.0, AcceptedCodes(), fail_after, recover_after)
    category = "normal" if status and status < 400 else ("error" if status else "disconnect")
    return Checked(target, result, at, category)


def feed(server_id: int, statuses: list[int | None], start: datetime = T0, **kw) -> None:
    for i, status in enumerate(statuses):
        checks_record(checked=[fake(server_id, status, start + timedelta(minutes=5 * i), **kw)])


def test_timeline_holds_only_confirmed_changes(db):
    sid = add_server()
    feed(sid, [200, None, 200, None, None, None, 500, 500, 200])
    timeline = [(c.from_status, c.to_status, c.at) for c in server_timeline(server_id=sid)]
    assert timeline == [
        ("unknown", "normal", T0),
        ("normal", "disconnect", T0 + timedelta(minutes=20)),
        ("disconnect", "error", T0 + timedelta(minutes=35)),
        ("error", "normal", T0 + timedelta(minutes=40)),
    ]
    change = StatusChange.objects.get(to_status="disconnect")
    assert change.status_check.checked_at == change.at and "2 checks in a row" in change.reason
    m = ServerMonitor.objects.get(server_id=sid)
    assert (m.status, m.status_since, m.streak) == ("normal", T0 + timedelta(minutes=40), 0)
    assert m.next_check_at == T0 + timedelta(minutes=40, seconds=300)


def test_several_checks_of_one_server_in_one_batch_apply_in_time_order(db):
    sid = add_server()
    batch = [
        fake(sid, None, T0 + timedelta(minutes=10)),
        fake(sid, 200, T0),
        fake(sid, None, T0 + timedelta(minutes=5)),
    ]
    checks_record(checked=batch)
    assert [(c.from_status, c.to_status) for c in server_timeline(server_id=sid)] == [
        ("unknown", "normal"),
        ("normal", "disconnect"),
    ]


def test_checks_in_a_maintenance_window_move_no_status_and_are_left_out_of_uptime(db):
    sid = add_server()
    MaintenanceWindow.objects.create(
        server_id=sid, starts_at=T0 + timedelta(minutes=9), ends_at=T0 + timedelta(minutes=31)
    )
    feed(sid, [200, 200, None, None, None, None, None, 200])  # 10, 15, 20, 25, 30 are inside the window
    assert [(c.from_status, c.to_status) for c in server_timeline(server_id=sid)] == [("unknown", "normal")]
    with override_settings(MONITOR_INTERVAL=3600.0):  # checks every 5 min here: never stale
        assert server_shown_status(server_id=sid, now=T0 + timedelta(minutes=20)) == "maintenance"
        assert server_shown_status(server_id=sid, now=T0 + timedelta(minutes=40)) == "normal"
    rollups_build(since=T0, now=T0 + timedelta(minutes=40))
    r = HourlyRollup.objects.get(server_id=sid)
    assert (r.normal, r.disconnect, r.maintenance) == (3, 0, 5)
    assert server_uptime(server_id=sid, now=T0 + timedelta(minutes=40))["24h"].up == 100.0


def _check(sid: int, at: datetime, category: str, status: int | None, ms: float) -> StatusCheck:
    return StatusCheck(
        server_id=sid,
        requested_url="http://x/",
        checked_at=at,
        status_code=status,
        category=category,
        latency_ms=ms,
        agent="monitor",
    )


def test_rollups_and_uptime_match_hand_computation(db):
    sid = add_server()
    other = add_server("127.0.0.251")
    h = T0  # 10:00 UTC
    StatusCheck.objects.bulk_create(
        [
            _check(sid, h + timedelta(minutes=1), "normal", 200, 100.0),
            _check(sid, h + timedelta(minutes=6), "normal", 200, 300.0),
            _check(sid, h + timedelta(minutes=11), "delay", 200, 3200.0),
            _check(sid, h + timedelta(minutes=16), "error", 503, 50.0),
            _check(sid, h + timedelta(minutes=21), "disconnect", None, 1000.0),
            _check(sid, h + timedelta(hours=1, minutes=2), "normal", 200, 200.0),  # 11:00 bucket
            _check(sid, h - timedelta(days=3), "disconnect", None, 1000.0),  # in 7 d, not in 24 h
            _check(sid, h - timedelta(days=3), "disconnect", None, 1000.0),
            _check(other, h + timedelta(minutes=3), "normal", 200, 1.0),
            StatusCheck(
                server_id=sid,
                requested_url="http://x/",
                checked_at=h,
                status_code=200,
                category="normal",
                latency_ms=5.0,
                agent="load",
            ),  # a crawl fetch: not part of the monitor's history
        ]
    )
    now = h + timedelta(hours=1, minutes=30)
    assert rollups_build(since=h - timedelta(days=4), now=now) == 4
    assert rollups_build(since=h - timedelta(days=4), now=now) == 4  # idempotent upsert
    assert HourlyRollup.objects.count() == 4
    r = HourlyRollup.objects.get(server_id=sid, hour=h)
    assert (r.normal, r.delay, r.error, r.disconnect, r.timed) == (2, 1, 1, 1, 4)
    assert (r.latency_min_ms, r.latency_max_ms) == (50.0, 3200.0)
    assert r.latency_mean_ms == pytest.approx((100 + 300 + 3200 + 50) / 4)  # 912.5
    # sorted 50, 100, 300, 3200: rank 3*0.95 = 2.85 -> 300 + 0.85 * 2900 = 2765
    assert r.latency_p95_ms == pytest.approx(2765.0)

    up = server_uptime(server_id=sid, now=now)
    # 24 h: the 10:00 and 11:00 buckets: 3 normal, 1 delay, 1 error, 1 disconnect -> 4/6 up
    assert up["24h"].checks == 6 and up["24h"].up == pytest.approx(400 / 6)
    assert up["24h"].shares["error"] == pytest.approx(100 / 6)
    # 7 d adds the two disconnects of three days ago: 4/8 up
    assert up["7d"].checks == 8 and up["7d"].up == pytest.approx(50.0)
    assert up["7d"].shares["disconnect"] == pytest.approx(100 * 3 / 8)
    assert up["30d"].checks == 8


def test_load_profile_per_hour_of_day(db):
    sid = add_server()
    day = T0.replace(hour=0)
    HourlyRollup.objects.bulk_create(
        [
            HourlyRollup(server_id=sid, hour=day + timedelta(hours=3), normal=12, timed=12, latency_mean_ms=100.0),
            HourlyRollup(
                server_id=sid,
                hour=day - timedelta(days=1) + timedelta(hours=3),
                normal=4,
                timed=4,
                latency_mean_ms=300.0,
            ),
            HourlyRollup(server_id=sid, hour=day + timedelta(hours=14), normal=12, timed=12, latency_mean_ms=40.0),
            HourlyRollup(
                server_id=sid,
                hour=day - timedelta(days=40) + timedelta(hours=5),
                normal=12,
                timed=12,
                latency_mean_ms=9.0,
            ),
        ]
    )
    now = day + timedelta(hours=20)
    assert load_profiles_build(now=now, days=28) == 1
    profile = Server.objects.get(id=sid).load_profile
    assert profile[3] == pytest.approx(150.0)  # (12*100 + 4*300) / 16
    assert profile[14] == 40.0
    assert profile[5] is None  # 40 days ago: outside the 28-day profile
    assert server_load_profile(server_id=sid, days=28, now=now) == profile


@override_settings(MONITOR_RAW_RETENTION_DAYS=14, MONITOR_ROLLUP_RETENTION_DAYS=366)
def test_prune_keeps_recent_checks_and_a_year_of_rollups(db):
    sid = add_server()
    now = T0
    StatusCheck.objects.bulk_create(
        [
            _check(sid, now - timedelta(days=15), "normal", 200, 1.0),
            _check(sid, now - timedelta(days=13), "normal", 200, 1.0),
        ]
    )
    HourlyRollup.objects.bulk_create(
        [
            HourlyRollup(server_id=sid, hour=now - timedelta(days=367)),
            HourlyRollup(server_id=sid, hour=now - timedelta(days=300)),
        ]
    )
    out = history_prune(now=now)
    assert (out.checks, out.rollups) == (1, 1)
    assert StatusCheck.objects.get().checked_at == now - timedelta(days=13)
    assert HourlyRollup.objects.get().hour == now - timedelta(days=300)


def test_a_due_server_is_claimed_once_and_dispatched_once(db, django_capture_on_commit_callbacks):
    ids = [add_server(f"127.0.0.{200 + i}") for i in range(3)]
    ServerMonitor.objects.filter(server_id=ids[2]).update(next_check_at=T0 + timedelta(days=3650))  # not due
    with django_capture_on_commit_callbacks() as sent:
        assert monitors_dispatch_due() == 2
        assert monitors_dispatch_due() == 0  # already dispatched: a second beat run sends nothing
    assert len(sent) == 1  # one message carries the batch
    first = monitors_claim(server_ids=ids)
    assert sorted(m.server_id for m in first) == ids[:2]
    assert monitors_claim(server_ids=ids) == []  # a redelivered message claims nothing


def test_import_is_idempotent_and_keeps_status(db):
    rows = [row("http://127.0.0.5:81/", group="a", crawler_num=2, interval_s=60.0)]
    first = servers_import(trusted=True, rows=rows)
    ServerMonitor.objects.update(status="error")
    again = servers_import(trusted=True, rows=rows)
    assert (first.created, again.created, again.updated) == (1, 0, 1)
    assert Server.objects.count() == ServerMonitor.objects.count() == 1
    m = ServerMonitor.objects.select_related("server").get()
    assert (m.status, m.interval_s, m.server.group, m.server.crawler_num, m.server.trusted) == (
        "error",
        60.0,
        "a",
        2,
        True,
    )
