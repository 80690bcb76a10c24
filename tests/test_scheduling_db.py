"""The schedulers in the database, on SQLite: the active scan's staleness choice against the pure
reference, the dispatcher's policy order, pause and resume at an hour boundary, the operators' table,
and the beat jobs the migrations create."""

from __future__ import annotations

import importlib
import json
import random
import statistics
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from crawlcore.models import Page, Server, StatusCheck, Url
from crawlcore.services import recrawl_choice as selection
from crawlcore.services.load_dispatch import dispatch_due
from crawlcore.services.schedule import schedule_table
from crawlcore.services.sweep import active_candidates
from monitoring.models import ServerMonitor
from scheduling.staleness_score import Candidate, prune_age, top_m

pytestmark = pytest.mark.django_db

PERIOD, HORIZON = 60.0, 30
NOW = datetime(2024, 5, 1, 14, 30, tzinfo=UTC)  # hour 14 (TIME_ZONE is UTC)


def _server(n: int, profile: list[float | None] | None = None, **fields) -> Server:
    server = Server.objects.create(scheme="http", host=f"s{n}.example", port=80, load_profile=profile, **fields)
    if profile is not None:
        ServerMonitor.objects.create(server=server)
    return server


def _url(server: Server, n: int, **fields) -> Url:
    return Url.objects.create(url=f"{server.origin}/{n}", url_hash=f"{server.id:08d}{n:016d}", server=server, **fields)


# --------------------------------------------------------------------------------------------------
# Seed 004: the database's top m equals the pure reference


def _get(server: Server, at: datetime, nbytes: int, ms: float) -> None:
    StatusCheck.objects.create(
        server=server,
        requested_url=f"{server.origin}/x",
        checked_at=at,
        category="normal",
        latency_ms=ms,
        bytes=nbytes,
        agent="load",
    )


@pytest.mark.parametrize("cheap", [False, True], ids=["costly", "cheap"])
@pytest.mark.parametrize("seed", range(4))
def test_staleness_top_m_in_the_database_equals_brute_force(settings, monkeypatch, seed, cheap):
    """`cheap`: costs well below the horizon's weight, so the age bound prunes (and must lose nothing)."""
    # A one-hour cycle of 60 one-minute periods; 14:30 is period 30 of it: T - t = 30.
    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_RECRAWL_CYCLE = PERIOD, 3600.0
    settings.CRAWL_REVISIT_AFTER, settings.CRAWL_RECRAWL_POLICY = 0, "staleness-plain"
    bounds: list[int | None] = []
    monkeypatch.setattr(selection, "prune_age", lambda *a, **kw: bounds.append(prune_age(*a, **kw)) or bounds[-1])
    rng = random.Random(seed)
    servers = [_server(i) for i in range(5)]
    rate = {}  # bytes per second each server is expected to count with
    for i, server in enumerate(servers[:4]):
        if i < 3:  # seen in hour 14 (two GETs on different days): bytes over seconds of both
            b1, b2, ms1, ms2 = rng.randrange(1000, 90_000), rng.randrange(1000, 90_000), rng.uniform(5, 900), 50.0
            _get(server, NOW - timedelta(days=1, minutes=20), b1, ms1)
            _get(server, NOW - timedelta(days=2), b2, ms2)
            rate[server.id] = (b1 + b2) * 1000 / (ms1 + ms2)
        else:  # seen only at 9 and 10 o'clock: the mean of those hours
            _get(server, NOW - timedelta(hours=5), 50_000, 100.0)
            _get(server, NOW - timedelta(hours=4), 50_000, 500.0)
            rate[server.id] = (500_000 + 100_000) / 2
    _get(servers[0], NOW - timedelta(days=30), 1, 1000.0)  # older than CRAWL_THROUGHPUT_DAYS: ignored
    default = statistics.median([rate[s.id] for s in servers[:3]])
    rate[servers[4].id] = default  # never seen: the median of the servers seen in this hour
    cands = []
    for n in range(rng.randrange(20, 80)):
        server = rng.choice(servers)
        periods = rng.randrange(0, 40)
        # Half a period off the boundary: the SQLite clock arithmetic is exact to well under a second.
        checked = NOW - timedelta(seconds=(periods + 0.5) * PERIOD)
        length = rng.choice([None, 1024, 4096, rng.randrange(0, 20_000 if cheap else 5_000_000)])
        url = _url(server, n, state="visited", last_checked_at=checked, content_length=length)
        size = None
        if rng.random() < 0.5:
            size = rng.choice([0, 2048, rng.randrange(1, 20_000 if cheap else 3_000_000)])
            Page.objects.create(url=url, body_z=zlib.compress(b""), size=size, checksum="x", fetched_at=checked)
        nbytes = size if size is not None else length if length is not None else 16 * 1024
        cands.append(Candidate(url.id, periods, nbytes, 1.0 / rate[server.id]))
    # Rows the sweep must never pick: not Visited, leased, set aside, or on a disabled server.
    _url(servers[0], 900, state="init", last_checked_at=NOW - timedelta(days=9))
    _url(
        servers[0],
        901,
        state="visited",
        last_checked_at=NOW - timedelta(days=9),
        lease_owner="w",
        lease_expires_at=NOW + timedelta(minutes=5),
    )
    _url(servers[0], 902, state="visited", last_checked_at=NOW - timedelta(days=9), exclusion_reason="robots.txt")
    off = _server(99, enabled=False)
    _url(off, 903, state="visited", last_checked_at=NOW - timedelta(days=9))
    assert selection.horizon_remaining(now=NOW) == HORIZON
    for m in (1, 3, len(cands) // 2, len(cands), len(cands) + 5):
        assert active_candidates(now=NOW, limit=m) == top_m(cands, m, remaining=HORIZON), m
    if cheap:
        assert any(bounds), "the age bound never pruned: the test does not cover it"


def test_horizon_is_what_is_left_of_the_recrawl_cycle(settings):
    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_RECRAWL_CYCLE = 60.0, 86400.0
    midnight = datetime(2024, 5, 1, tzinfo=UTC)
    assert selection.horizon_remaining(now=midnight) == 1440  # T: the whole day ahead
    assert selection.horizon_remaining(now=NOW) == 1440 - 870  # 14:30 is period 870
    assert selection.horizon_remaining(now=midnight - timedelta(seconds=1)) == 1  # the cycle's last period


def test_active_scan_capacity_is_measured_per_period(settings):
    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_ACTIVE_SCAN_CAPACITY = 60.0, 100
    server = _server(1)
    assert selection.active_scan_room(now=NOW) == 100  # nothing measured yet: the cap
    for n in range(7):  # confirmed within the last period
        _url(server, n, state="visited", last_checked_at=NOW - timedelta(seconds=10 + n))
    assert selection.active_scan_room(now=NOW) == 14  # nothing left over: they had room, m doubles
    lease = {"lease_owner": "sweep:active_scan:x", "lease_expires_at": NOW + timedelta(minutes=5)}
    for n in range(10, 13):  # three still out: the workers were saturated, m = 7, 3 of it still out
        _url(server, n, state="visited", last_checked_at=NOW - timedelta(hours=3), **lease)
    assert selection.active_scan_room(now=NOW) == 4


@pytest.mark.parametrize(
    ("policy", "first"),
    [
        ("round-robin", "oldest"),
        ("change-frequency", "changing"),
        ("importance", "linked"),
        ("staleness-plain", "small"),
    ],
)
def test_comparison_policies_rank_by_their_own_measure(settings, policy, first):
    from crawlcore.models import Link, UrlEvent

    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_RECRAWL_CYCLE = PERIOD, 3600.0
    settings.CRAWL_REVISIT_AFTER, settings.CRAWL_RECRAWL_POLICY = 0, policy
    server = _server(1)
    _get(server, NOW - timedelta(days=1), 1000, 1000.0)  # 1 KB/s: a 1 MB page costs 1000 s
    age = {"oldest": 11, "changing": 10, "linked": 10, "small": 10}
    urls = {}
    for n, name in enumerate(age):
        checked = NOW - timedelta(seconds=(age[name] + 0.5) * PERIOD)
        urls[name] = _url(server, n, state="visited", last_checked_at=checked)
        size = 1000 if name == "small" else 1_000_000
        Page.objects.create(url=urls[name], body_z=b"", size=size, checksum="x", fetched_at=NOW)
    # First loaded an hour ago, five changes found since: the estimator ours uses gives it the highest rate.
    loaded = {"from_state": "init", "to_state": "visited", "agent": "load", "at": NOW - timedelta(hours=1)}
    UrlEvent.objects.create(url=urls["changing"], **loaded)
    for _ in range(5):
        changed = {"from_state": "visited", "to_state": "init", "agent": "active_scan", "at": NOW}
        UrlEvent.objects.create(url=urls["changing"], **changed)
    for n in range(5):
        Link.objects.create(from_url=_url(server, 100 + n, state="visited"), to_url=urls["linked"])
    Url.objects.update(created_at=NOW - timedelta(days=1))  # first seen a day before
    assert active_candidates(now=NOW, limit=1) == [urls[first].id]


def test_revisit_after_is_still_the_floor(settings):
    settings.CRAWL_REVISIT_AFTER = 3600
    server = _server(1)
    young = _url(server, 1, state="visited", last_checked_at=NOW - timedelta(minutes=30))
    old = _url(server, 2, state="visited", last_checked_at=NOW - timedelta(hours=2))
    assert active_candidates(now=NOW, limit=10) == [old.id]
    assert set(active_candidates(now=NOW + timedelta(hours=1), limit=10)) == {old.id, young.id}


# --------------------------------------------------------------------------------------------------
# Seed 000: the dispatcher


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    out: list[int] = []
    monkeypatch.setattr(
        "crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: out.append(kw["server_id"])
    )
    return out


def _due(server: Server, n: int, at: datetime) -> Url:
    return _url(server, n, state="init", next_check_at=at - timedelta(hours=2))


def _crawled(server: Server, at: datetime) -> None:
    StatusCheck.objects.create(
        server=server,
        requested_url=f"{server.origin}/",
        checked_at=at,
        category="normal",
        latency_ms=10.0,
        agent="load",
    )


def test_dispatch_follows_the_hybrid_table_of_the_hour(settings, sent):
    settings.CRAWL_SCHEDULER = "hybrid"
    flat = [5.0] * 24
    a = _server(1, flat)
    b = _server(2, [9.0] * 14 + [8.0] + [9.0] * 9)  # loaded all day; its best hour is 14
    c = _server(3, [1.0] * 24)
    d = _server(4)  # no profile yet
    for s in (a, b, c, d):
        _due(s, 1, NOW)
    assert dispatch_due(now=NOW) == 4
    assert sent == [b.id, c.id, a.id, d.id]


@pytest.mark.parametrize(("policy", "order"), [("sorting", [3, 1, 2]), ("random", [1, 2, 3])])
def test_dispatch_follows_sorting_and_random(settings, sent, policy, order):
    settings.CRAWL_SCHEDULER = policy
    servers = [_server(1, [5.0] * 24), _server(2, [9.0] * 24), _server(3, [1.0] * 24)]
    for s in servers:
        _due(s, 1, NOW)
    dispatch_due(now=NOW)
    assert sent == [servers[i - 1].id for i in order]


def test_unfinished_server_pauses_at_the_boundary_and_resumes_from_its_remaining_urls(settings, sent):
    settings.CRAWL_SCHEDULER, settings.CRAWL_PAUSE_LOOKAHEAD, settings.CRAWL_PAUSE_MARGIN = "hybrid", 3, 0.1
    settings.CRAWL_LOAD_SLOTS = 2  # two robots, both kept busy: the paused server is not released
    boundary = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    # Hour 10 is busy for `waits`, hour 12 quiet: it stops at 10:00 and goes on at 12:00.
    waits = _server(1, [5.0] * 10 + [9.0, 7.0, 1.0] + [5.0] * 11)
    goes_on = _server(2, [5.0] * 24)
    idle = _server(3, [5.0] * 10 + [9.0, 7.0, 1.0] + [5.0] * 11)  # not crawled in the last hour: not paused
    for s in (waits, goes_on):
        _crawled(s, boundary - timedelta(minutes=20))
    done = _url(waits, 0, state="visited", last_checked_at=boundary - timedelta(minutes=20))
    remaining = [_due(waits, n, boundary) for n in range(1, 4)]
    for s in (goes_on, idle):
        _due(s, 1, boundary)

    assert dispatch_due(now=boundary + timedelta(seconds=5)) == 2
    assert sorted(sent) == sorted([goes_on.id, idle.id])
    waits.refresh_from_db()
    assert waits.paused_until == boundary + timedelta(hours=2)
    assert set(Url.objects.filter(server=waits, state="init").values_list("next_check_at", flat=True)) == {
        boundary + timedelta(hours=2)
    }
    # A link to it found meanwhile waits too; the decision is taken once: later rounds change nothing.
    late = _due(waits, 9, boundary + timedelta(minutes=30))
    sent.clear()
    dispatch_due(now=boundary + timedelta(minutes=30))
    assert waits.id not in sent
    late.refresh_from_db()
    assert late.next_check_at == boundary + timedelta(hours=2)
    goes_on.refresh_from_db()
    assert goes_on.paused_until == boundary  # "decided for this hour: go on"

    # 12:00: its hour. It is sent again, and its Init URLs are the ones it had left (the checkpoint).
    sent.clear()
    noon = boundary + timedelta(hours=2, seconds=5)
    dispatch_due(now=noon)
    assert waits.id in sent
    assert set(
        Url.objects.filter(server=waits, state="init", next_check_at__lte=noon).values_list("id", flat=True)
    ) == {u.id for u in [*remaining, late]}
    done.refresh_from_db()
    assert done.state == "visited"


def test_a_paused_server_is_released_rather_than_leave_the_workers_idle(settings, sent):
    settings.CRAWL_SCHEDULER, settings.CRAWL_PAUSE_LOOKAHEAD = "hybrid", 3
    settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = 1, 1  # one robot
    boundary = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    waits = _server(1, [5.0] * 10 + [9.0, 7.0, 1.0] + [5.0] * 11)
    busy = _server(2, [5.0] * 24)
    _crawled(waits, boundary - timedelta(minutes=20))
    _due(waits, 1, boundary)
    _due(busy, 1, boundary)
    assert dispatch_due(now=boundary + timedelta(seconds=5)) == 1 and sent == [busy.id]
    # busy's message still waits in the queue: nothing is released.
    assert dispatch_due(now=boundary + timedelta(seconds=10)) == 0
    # A worker took it (claiming clears dispatched_at): the queue is empty, so the paused server goes.
    Server.objects.filter(id=busy.id).update(dispatched_at=None)
    Url.objects.filter(server=busy).update(state="visited")
    assert dispatch_due(now=boundary + timedelta(seconds=15)) == 1 and sent == [busy.id, waits.id]
    waits.refresh_from_db()
    assert waits.paused_until <= boundary + timedelta(seconds=15)
    # Released for this hour: the boundary step leaves it alone until the next hour.
    Server.objects.filter(id=waits.id).update(dispatched_at=None)
    assert dispatch_due(now=boundary + timedelta(seconds=20)) == 1


def _working(server: Server, now: datetime) -> None:
    """A load worker took a slot of the server, as its visit does (its dispatch is consumed), and holds a
    batch of its Init URLs."""
    from crawlcore.services.servers import server_claim

    assert server_claim(server_id=server.id, owner="w1", agent="load", now=now) is not None
    lease = {"lease_owner": "w1", "lease_expires_at": now + timedelta(minutes=5)}
    Url.objects.filter(server=server, state="init").update(**lease)


def _done(server: Server) -> None:
    from crawlcore.services.servers import server_release

    Url.objects.filter(server=server).update(state="visited", lease_owner="", lease_expires_at=None)
    server_release(server_id=server.id, owner="w1")


def test_servers_are_handed_out_by_capacity_in_column_order(settings, sent):
    settings.CRAWL_SCHEDULER, settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = "sorting", 3, 1
    servers = [_server(n, [float(n)] * 24) for n in range(1, 11)]  # sorting: 1, 2, … 10
    for s in servers:
        _due(s, 1, NOW)
    assert dispatch_due(now=NOW) == 4  # three free robots and one prefetched
    assert sent == [s.id for s in servers[:4]]
    assert dispatch_due(now=NOW + timedelta(seconds=5)) == 0  # nothing more while they wait in the broker
    for s in servers[:2]:
        _working(s, NOW)
    assert dispatch_due(now=NOW + timedelta(seconds=10)) == 0  # 2 busy + 2 queued: 3 slots + 1 prefetch used
    for s in servers[:2]:
        _done(s)
    assert dispatch_due(now=NOW + timedelta(seconds=15)) == 2  # two robots free again: the next two
    assert sent[4:] == [servers[4].id, servers[5].id]


def test_the_wait_queue_is_rebuilt_from_the_new_column_at_the_hour_boundary(settings, sent):
    from crawlcore.services.load_dispatch import hour_key, load_dispatch_current

    settings.CRAWL_SCHEDULER, settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = "sorting", 1, 1
    before = datetime(2024, 5, 1, 10, 59, 50, tzinfo=UTC)
    a = _server(1, [1.0] * 11 + [9.0] * 13)  # first until 11:00, last after
    b = _server(2, [5.0] * 24)
    c = _server(3, [9.0] * 11 + [1.0] * 13)
    for s in (a, b, c):
        _due(s, 1, before)
    assert dispatch_due(now=before) == 2 and sent == [a.id, b.id]  # one robot, one prefetched
    after = before + timedelta(seconds=15)
    sent.clear()
    # 11:00:05: both 10 o'clock messages are still in the broker; the queue starts again from hour 11's column.
    assert dispatch_due(now=after) == 2 and sent == [c.id, b.id]
    assert not load_dispatch_current(server_id=a.id, hour=hour_key(before), now=after)  # dropped by the worker
    assert load_dispatch_current(server_id=c.id, hour=hour_key(after), now=after)
    assert load_dispatch_current(server_id=a.id, hour=None, now=after)  # a robot's continuation on its server


def test_a_robots_continuation_carries_no_hour_and_needs_no_room(settings, monkeypatch):
    from crawlcore.services.load_dispatch import servers_dispatch_with_due_work

    out: list[dict] = []
    monkeypatch.setattr("crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: out.append(kw))
    settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = 1, 0
    busy, mine = _server(1, [1.0] * 24), _server(2, [1.0] * 24)
    for s in (busy, mine):
        _due(s, 1, timezone.now())
    _working(busy, timezone.now())  # the one slot is taken
    assert servers_dispatch_with_due_work(server_ids=[mine.id]) == 0  # new work waits for room
    assert servers_dispatch_with_due_work(server_ids=[mine.id], continuation=True) == 1
    assert out == [{"server_id": mine.id, "crawler_num": None, "hour": None}]


def test_default_pause_rule_is_the_papers_next_hour_against_the_one_after(settings, sent):
    settings.CRAWL_SCHEDULER, settings.CRAWL_LOAD_SLOTS = "hybrid", 1  # one robot: a paused server is not released
    assert (settings.CRAWL_PAUSE_LOOKAHEAD, settings.CRAWL_PAUSE_MARGIN) == (1, 0.0)  # no environment: the paper's
    boundary = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    slightly = _server(1, [5.0] * 10 + [9.0, 8.9] + [5.0] * 12)  # hour 11 a little better: the paper pauses
    later = _server(2, [5.0] * 10 + [9.0, 9.5, 1.0] + [5.0] * 11)  # only hour 12 is better: beyond the look-ahead
    for s in (slightly, later):
        _crawled(s, boundary - timedelta(minutes=20))
        _due(s, 1, boundary)
    dispatch_due(now=boundary + timedelta(seconds=5))
    slightly.refresh_from_db()
    later.refresh_from_db()
    assert slightly.paused_until == boundary + timedelta(hours=1)
    assert later.paused_until == boundary  # decided: go on


def test_sorting_never_pauses(settings, sent):
    settings.CRAWL_SCHEDULER = "sorting"
    boundary = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    s = _server(1, [5.0] * 10 + [9.0, 1.0] + [5.0] * 12)
    _crawled(s, boundary - timedelta(minutes=20))
    _due(s, 1, boundary)
    assert dispatch_due(now=boundary + timedelta(seconds=5)) == 1
    s.refresh_from_db()
    assert s.paused_until is None


def test_schedule_table_shows_the_columns_profiles_and_pauses(settings):
    settings.CRAWL_SCHEDULER = "hybrid"
    a = _server(1, [5.0] * 24)
    b = _server(2, [9.0] * 3 + [2.0] + [9.0] * 20)
    c = _server(3)
    Server.objects.filter(id=a.id).update(paused_until=NOW + timedelta(hours=1))
    table = schedule_table(now=NOW)
    assert (table.policy, table.hour, table.unprofiled) == ("hybrid", 14, [c.id])
    assert table.columns[3] == [b.id, a.id] and table.columns[14] == [a.id, b.id]
    assert table.servers[b.id]["best_hour"] == 3 and table.servers[c.id]["profile_ms"] is None
    assert table.servers[a.id]["best_hour"] is None  # flat: every hour alike
    assert table.servers[a.id]["paused_until"] == (NOW + timedelta(hours=1)).isoformat()
    assert table.as_json()["columns"]["3"] == [b.id, a.id]


def test_schedule_table_command_prints_the_table(settings, capsys):
    _server(1, [5.0] * 24)
    call_command("schedule_table")
    out = capsys.readouterr().out
    assert "hybrid" in out and "http://s1.example" in out
    call_command("schedule_table", "--json")
    table = json.loads(capsys.readouterr().out)
    assert list(table) == [str(h) for h in range(24)] and table["5"] == ["http://s1.example"]


def test_schedule_table_json_names_live_servers_in_column_order(settings, capsys):
    settings.CRAWL_SCHEDULER = "hybrid"
    a = _server(1, [5.0] * 24)
    b = _server(2, [9.0] * 3 + [2.0] + [9.0] * 20)
    _server(3)  # no profile yet: after the others
    call_command("schedule_table", "--json")
    table = json.loads(capsys.readouterr().out)
    assert table["3"] == [b.origin, a.origin, "http://s3.example"]
    assert table["14"] == [a.origin, b.origin, "http://s3.example"]
    call_command("schedule_table", "--json", "--policy", "random")
    assert json.loads(capsys.readouterr().out)["3"] == [a.origin, b.origin, "http://s3.example"]


# --------------------------------------------------------------------------------------------------
# Item 4: every beat job is a PeriodicTask, created by a data migration, and an operator's edit stays

BEAT_MIGRATIONS = [
    ("crawladmin", "0002_periodic_tasks"),
    ("crawladmin", "0003_scan_periodic_tasks"),
    ("crawladmin", "0014_check_partitions_beat"),
    ("monitoring", "0002_periodic_tasks"),
    ("monitoring", "0010_domain_expiry_beat"),
    ("reports", "0004_sla_reports_beat"),
    ("ranking", "0002_periodic_task"),
    ("dashboard", "0003_periodic_tasks"),
]
BEAT_TASKS = {
    "tasks.housekeeping.dispatch",
    "tasks.housekeeping.reconcile",
    "tasks.housekeeping.check_partitions",
    "tasks.scan.sweep_active",
    "tasks.scan.sweep_inactive",
    "tasks.monitor.dispatch",
    "tasks.monitor.rollup",
    "tasks.monitor.load_profiles",
    "tasks.monitor.prune",
    "tasks.monitor.domains",
    "tasks.rank.rank_crawl",
}


def _rerun_beat_migrations() -> None:
    """Apply each beat migration's forward function again, with the historical models, as a second
    `migrate` over a database that already has the jobs would (get_or_create)."""
    state = MigrationLoader(connection).project_state()
    for app, name in BEAT_MIGRATIONS:
        package = django_apps.get_app_config(app).name  # the crawl core's label is not its package's name
        module = importlib.import_module(f"{package}.migrations.{name}")
        for op in module.Migration.operations:
            op.code(state.apps, None)


def test_every_beat_job_exists_after_migrate_and_is_a_registered_task():
    from crawladmin.celery import app

    app.loader.import_default_modules()
    tasks = set(PeriodicTask.objects.values_list("task", flat=True))
    assert BEAT_TASKS <= tasks
    assert tasks - {"celery.backend_cleanup"} <= set(app.tasks)


def test_the_migrations_create_exactly_the_beat_job_table():
    from crawlcore.beat import BEAT_JOBS

    rows = PeriodicTask.objects.exclude(task="celery.backend_cleanup").values_list(
        "name", "task", "interval__every", "queue", "interval__period"
    )
    assert set(rows) == {(j.name, j.task, j.every, j.queue, j.period) for j in BEAT_JOBS}


def test_every_beat_job_goes_to_the_queue_its_task_is_routed_to():
    from crawladmin.celery import app
    from crawlcore.beat import BEAT_JOBS

    for job in BEAT_JOBS:
        assert app.amqp.router.route({}, job.task)["queue"].name == job.queue, job.name


def test_an_operators_edit_survives_a_second_migrate():
    job = PeriodicTask.objects.get(task="tasks.housekeeping.dispatch")
    job.interval = IntervalSchedule.objects.create(every=30, period="seconds")
    job.enabled = False
    job.save()
    before = PeriodicTask.objects.count()
    _rerun_beat_migrations()
    call_command("migrate", verbosity=0)  # and a real one: nothing to apply, nothing changed
    job.refresh_from_db()
    assert (job.interval.every, job.enabled) == (30, False)
    assert PeriodicTask.objects.count() == before


def test_changes_found_make_a_page_count_as_staler(settings):
    """ours: s_j the staleness a check removes over what is left of the cycle, λ by Cho & Garcia-Molina's
    estimator from the URL's checks, cost the reload's seconds times the chance it is needed; computed here
    again in Python."""
    import math

    from crawlcore.models import UrlEvent

    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_RECRAWL_CYCLE = PERIOD, 3600.0
    settings.CRAWL_REVISIT_AFTER, settings.CRAWL_RECRAWL_POLICY = 0, "staleness"
    server = _server(1)
    rng = random.Random(5)
    urls, expected = [], {}
    horizon = HORIZON * PERIOD
    for n in range(30):
        tau = rng.uniform(60, 7200)
        url = _url(server, n, state="visited", last_checked_at=NOW - timedelta(seconds=tau))
        checks = rng.choice([0, 0, 1, 3, 8, 12])
        changes = rng.randint(0, checks)
        for k in range(checks):
            to = "init" if k < changes else "visited"
            UrlEvent.objects.create(url=url, from_state="visited", to_state=to, agent="active_scan", at=NOW)
        # The first load (an hour after it was first seen, a day ago) starts the time the checks cover; a
        # later reload does not, and neither is a check.
        for hours in (23, 2):
            load = {"from_state": "init", "to_state": "visited", "agent": "load"}
            UrlEvent.objects.create(url=url, at=NOW - timedelta(hours=hours), **load)
        prior = 1 / 3600
        if checks:
            interval = (23 * 3600 - tau) / checks  # first loaded 23 h ago, last checked tau ago
            estimate = -math.log((checks - changes + 0.5) / (checks + 0.5)) / interval
            rate = (checks * estimate + prior) / (checks + 1)
        else:
            rate = prior
        removed = tau - (1 - math.exp(-rate * tau)) * (1 - math.exp(-rate * horizon)) / (rate * rate * horizon)
        reload = (1 - math.exp(-rate * tau)) * 16 * 1024 / 100_000  # no throughput seen: 100 KB/s
        expected[url.id] = HORIZON * removed / PERIOD - reload
        urls.append(url)
    Url.objects.update(created_at=NOW - timedelta(days=1))
    best = sorted(expected, key=lambda i: (-expected[i], i))
    assert active_candidates(now=NOW, limit=10) == best[:10]
    # Without the signal: whole periods since the check, ties by id.
    settings.CRAWL_RECRAWL_POLICY = "staleness-plain"
    periods = {u.id: int((NOW - u.last_checked_at).total_seconds() // PERIOD) for u in urls}
    assert active_candidates(now=NOW, limit=30) == sorted(periods, key=lambda i: (-periods[i], i))


def test_only_the_load_agents_visits_count_as_busy_robots(settings, sent):
    from crawlcore.services.load_dispatch import load_capacity
    from crawlcore.services.servers import server_claim

    settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = 2, 0
    scanned, loading = _server(1, [1.0] * 24), _server(2, [1.0] * 24)
    assert server_claim(server_id=scanned.id, owner="s1", agent="active_scan", now=NOW) is not None
    assert load_capacity(now=NOW).busy == 0  # a scan's visit holds no load robot
    _working(loading, NOW)
    assert load_capacity(now=NOW).busy == 1
    _done(loading)
    assert load_capacity(now=NOW).busy == 0
