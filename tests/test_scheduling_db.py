"""The schedulers in the database, on SQLite: the active scan's staleness choice against the pure
reference, the dispatcher's policy order, pause and resume at an hour boundary, the operators' table,
and the beat jobs the migrations create."""

from __future__ import annotations

import importlib
import random
import statistics
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from crawlcore.models import Page, Server, StatusCheck, Url
from crawlcore.services import staleness as selection
from crawlcore.services.dispatch import dispatch_due
from crawlcore.services.schedule import schedule_table
from crawlcore.services.sweep import active_candidates
from monitoring.models import ServerMonitor
from scheduling.staleness import Candidate, prune_age, top_m

pytestmark = pytest.mark.django_db

PERIOD, HORIZON = 60.0, 30.0
NOW = datetime(2024, 5, 1, 14, 30, tzinfo=UTC)  # hour 14 (TIME_ZONE is UTC)


def _server(n: int, profile: list[float | None] | None = None, **fields) -> Server:
    server = Server.objects.create(scheme="http", host=f"s{n}.example", port=80, load_profile=profile, **fields)
    if profile is not None:
        ServerMonitor.objects.create(server=server)
    return server


def _url(server: Server, n: int, **fields) -> Url:
    return Url.objects.create(url=f"{server.origin}/{n}", url_hash=f"{server.id:08d}{n:032d}", server=server, **fields)


# --------------------------------------------------------------------------------------------------
# Seed 004: the database's top m equals the pure reference


@pytest.mark.parametrize("cheap", [False, True], ids=["costly", "cheap"])
@pytest.mark.parametrize("seed", range(4))
def test_staleness_top_m_in_the_database_equals_brute_force(settings, monkeypatch, seed, cheap):
    """`cheap`: costs well below the horizon's weight, so the age bound prunes (and must lose nothing)."""
    settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_STALENESS_HORIZON = PERIOD, HORIZON
    settings.CRAWL_REVISIT_AFTER = 0
    bounds: list[int | None] = []
    monkeypatch.setattr(selection, "prune_age", lambda *a, **kw: bounds.append(prune_age(*a, **kw)) or bounds[-1])
    rng = random.Random(seed)
    top_ms = 200 if cheap else 3000
    servers = []
    for i in range(5):
        profile = [rng.choice([None, rng.uniform(50, top_ms)]) for _ in range(24)] if i < 4 else None
        servers.append(_server(i, profile))
    at_14 = [p[14] for p in Server.objects.values_list("load_profile", flat=True) if p and p[14] is not None]
    expected_default = statistics.median(at_14) / 1000 if at_14 else 1.0
    cands = []
    for n in range(rng.randrange(20, 80)):
        server = rng.choice(servers)
        periods = rng.randrange(0, 40)
        # Half a period off the boundary: the SQLite clock arithmetic is exact to well under a second.
        checked = NOW - timedelta(seconds=(periods + 0.5) * PERIOD)
        length = rng.choice([None, 1024, 4096, rng.randrange(0, 20_000 if cheap else 500_000)])
        url = _url(server, n, state="visited", last_checked_at=checked, content_length=length)
        size = None
        if rng.random() < 0.5:
            size = rng.choice([0, 2048, rng.randrange(1, 20_000 if cheap else 300_000)])
            Page.objects.create(url=url, body_z=zlib.compress(b""), size=size, checksum="x", fetched_at=checked)
        profile = Server.objects.filter(id=server.id).values_list("load_profile", flat=True).first()
        ms = profile[14] if profile else None
        response = ms / 1000 if ms is not None else expected_default
        kb = (size if size is not None else length if length is not None else 16 * 1024) / 1024
        cands.append(Candidate(url.id, periods, kb, response))
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
    for m in (1, 3, len(cands) // 2, len(cands), len(cands) + 5):
        assert active_candidates(now=NOW, limit=m) == top_m(cands, m, remaining=HORIZON), m
    if cheap:
        assert any(bounds), "the age bound never pruned: the test does not cover it"


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
    monkeypatch.setattr("crawlcore.services.dispatch.enqueue_load_on_commit", lambda **kw: out.append(kw["server_id"]))
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
    assert '"policy": "hybrid"' in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------
# Item 4: every beat job is a PeriodicTask, created by a data migration, and an operator's edit stays

BEAT_MIGRATIONS = [
    ("crawladmin", "0002_periodic_tasks"),
    ("crawladmin", "0003_scan_periodic_tasks"),
    ("monitoring", "0002_periodic_tasks"),
    ("ranking", "0002_periodic_task"),
    ("dashboard", "0003_periodic_tasks"),
]
BEAT_TASKS = {
    "tasks.housekeeping.dispatch",
    "tasks.housekeeping.reconcile",
    "tasks.scan.sweep_active",
    "tasks.scan.sweep_inactive",
    "tasks.monitor.dispatch",
    "tasks.monitor.rollup",
    "tasks.monitor.load_profiles",
    "tasks.monitor.prune",
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
