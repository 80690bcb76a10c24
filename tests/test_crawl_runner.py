"""The crawl runner (crawladmin.runner) one step at a time, on SQLite, with no worker: what each step runs,
and when the crawl ends."""

from __future__ import annotations

import pytest
from django.utils import timezone

from crawladmin import runner as runner_module
from crawladmin.runner import RECONCILE_EVERY, SWEEP_EVERY, CrawlRunner, crawl_seeds_insert
from crawlcore.beat import beat_job
from crawlcore.models import Url

pytestmark = pytest.mark.django_db

DISPATCH = beat_job("tasks.housekeeping.dispatch").name
RECONCILE = beat_job("tasks.housekeeping.reconcile").name
SWEEPS = [beat_job("tasks.scan.sweep_inactive").name, beat_job("tasks.scan.sweep_active").name]
SAMPLE = "crawl sample"
JOBS = "crawl jobs' samples"
MONITOR = beat_job("tasks.monitor.dispatch").name  # embedded only: beat sends the checks in the cluster
INDEX = beat_job("tasks.housekeeping.search_index").name


def _runner(**kwargs) -> CrawlRunner:
    """A runner whose jobs and counts take no time (their cost is not what these tests are about)."""
    return CrawlRunner(started=timezone.now(), t0=100.0, **{"timer": lambda: 0.0, **kwargs})


def test_the_first_step_runs_every_job_but_the_reconciler():
    step = _runner().step(100.0)
    assert step.ran == [MONITOR, DISPATCH, *SWEEPS, INDEX, JOBS, SAMPLE]
    assert step.stopped is None  # one quiet look is not enough


def test_later_steps_run_each_job_at_its_own_cadence():
    runner = _runner()
    runner.step(100.0)
    assert runner.step(100.5).ran == [DISPATCH]
    runner.idle_steps = 0
    assert runner.step(101.0).ran == [MONITOR, DISPATCH, SAMPLE]  # a sample a second at the start
    runner.idle_steps = 0
    # The sweeps every SWEEP_EVERY, the pages' full-text index every 2 s, as beat sends it.
    assert runner.step(100.0 + SWEEP_EVERY + 0.5).ran == [MONITOR, DISPATCH, *SWEEPS, INDEX, SAMPLE]
    runner.idle_steps = 0
    assert JOBS in runner.step(100.0 + 5.0 + 0.5).ran  # the crawl jobs' samples every 5 s
    runner.idle_steps = 0
    assert RECONCILE in runner.step(100.0 + RECONCILE_EVERY).ran


def test_the_embedded_crawl_sends_the_due_monitors_checks(monkeypatch):
    sent = []
    monkeypatch.setattr(runner_module, "monitors_dispatch_due", lambda: sent.append(1))
    runner = _runner()
    runner.step(100.0)
    runner.step(101.0)
    assert len(sent) == 2


def test_an_empty_crawl_is_done_after_two_quiet_steps():
    runner = _runner()
    assert runner.step(100.0).stopped is None
    assert runner.step(100.3).stopped == "done"


def test_a_due_url_keeps_the_crawl_going_until_its_time_is_up():
    # No worker here, and the test's transaction never commits, so nothing dispatched is ever loaded.
    crawl_seeds_insert(seeds=["http://runner.example/"])
    assert Url.objects.filter(state="init").count() == 1
    runner = _runner(max_seconds=5.0)
    for now in (100.0, 100.3, 101.0, 104.9):
        step = runner.step(now)
        assert step.stopped is None and step.progress["due"] + step.progress["leased"] >= 1
    assert runner.step(105.0).stopped == "max-seconds"


def test_max_pages_stops_before_any_job_runs():
    step = _runner(max_pages=0).step(100.0)
    assert (step.stopped, step.ran) == ("max-pages", [])


def test_dispatch_only_leaves_dispatch_reconcile_and_sweeps_to_beat():
    assert _runner(dispatch=False).step(100.0).ran == [SAMPLE]


def test_run_steps_until_stopped_and_sleeps_between_steps():
    clock = iter([100.0, 100.3, 100.6])
    slept: list[float] = []
    steps: list = []
    reason = _runner().run(on_step=steps.append, clock=lambda: next(clock), sleep=slept.append)
    assert reason == "done" and len(steps) == 2 and slept == [0.3]


def test_ctrl_c_is_a_reason_to_stop(monkeypatch):
    def interrupted(self, now):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module.CrawlRunner, "step", interrupted)
    assert _runner().run(sleep=lambda s: None) == "interrupted"


def test_while_urls_are_due_the_costly_counts_are_carried_over_and_the_end_is_decided_afresh():
    crawl_seeds_insert(seeds=["http://runner.example/"])
    runner = _runner(dispatch=False)
    assert runner.step(100.0).progress["leased"] == 0
    Url.objects.update(lease_owner="someone")  # leased meanwhile; still due
    assert runner.step(101.0).progress["leased"] == 0  # carried over: due URLs mean no end is near
    assert runner.step(100.0 + runner_module.FULL_PROGRESS_EVERY).progress["leased"] == 1  # counted again
    Url.objects.update(state="visited", lease_owner="")  # nothing due: every step counts everything
    progress = runner.step(111.0).progress
    assert progress["due"] == 0 and progress["leased"] == 0 and not any(progress.values())


def test_a_step_that_finds_the_database_locked_is_tried_again(monkeypatch):
    """A worker's long write can outlast SQLite's busy timeout: the crawl goes on rather than end there."""
    from django.db import OperationalError

    runner = _runner()
    real, calls = runner.step, []

    def step(now):
        calls.append(now)
        if len(calls) <= 2:
            raise OperationalError("database is locked")
        return real(now)

    monkeypatch.setattr(runner, "step", step)
    clock = iter(100.0 + i for i in range(100))
    assert runner.run(clock=lambda: next(clock), sleep=lambda s: None) == "done"
    assert len(calls) == 4  # two locked, then two quiet steps


def test_a_database_locked_for_too_long_ends_the_crawl(monkeypatch):
    from django.db import OperationalError

    runner = _runner()

    def step(now):
        raise OperationalError("database is locked")

    monkeypatch.setattr(runner, "step", step)
    clock = iter(100.0 + 10 * i for i in range(1000))
    with pytest.raises(OperationalError):
        runner.run(clock=lambda: next(clock), sleep=lambda s: None)
    assert next(clock) - 100.0 <= runner_module.LOCKED_FOR + 30


def test_a_costly_job_runs_no_more_often_than_its_share_of_the_time(monkeypatch):
    """The sweeps read tables that grow with the crawl: one that takes a second runs every ten, not every two."""
    ticks = iter([0.0, 1.0])  # the job's own clock: it takes one second
    job = runner_module.Job("slow", lambda: None, runner_module._every(SWEEP_EVERY))
    assert job.run_if_due(100.0, lambda: next(ticks))
    assert job.due_at == 100.0 + 1.0 / runner_module.COST_SHARE
    assert runner_module._every(SWEEP_EVERY)(0.0, 0.001) == SWEEP_EVERY  # a cheap one keeps its cadence


def test_with_nothing_due_counts_showing_work_in_hand_are_carried_over_for_a_costly_count(monkeypatch):
    """Nothing due but pages in hand (fetching, waiting for extraction): the full count, at its cost, is
    not made every step; once it shows nothing in hand, every step counts afresh."""
    from crawlcore.models import Page

    crawl_seeds_insert(seeds=["http://runner.example/"])
    Url.objects.update(state="visited")
    Page.objects.create(url=Url.objects.get(), body_z=b"", checksum="x", fetched_at=timezone.now())  # unextracted
    spent = [0.0]
    runner = _runner(dispatch=False, timer=lambda: spent[0])
    real = runner_module.crawl_progress
    counted: list[float] = []

    def slow_count(**kw):  # a count that takes half a second
        counted.append(kw.get("recheck_within", 0))
        spent[0] += 0.5
        return real(**kw)

    monkeypatch.setattr(runner_module, "crawl_progress", slow_count)
    assert runner.step(100.0).progress["unextracted"] == 1
    assert runner.step(101.0).progress["unextracted"] == 1 and len(counted) == 1  # carried over
    assert runner.step(105.0).progress["unextracted"] == 1 and len(counted) == 2  # 0.5 s / COST_SHARE later
    Page.objects.update(extracted_at=timezone.now())
    assert runner.step(106.0).progress["unextracted"] == 1  # old figures of work in hand: the end put off
    assert not any(runner.step(110.0).progress.values()) and len(counted) == 3  # counted afresh 5 s on
    assert not any(runner.step(110.3).progress.values()) and len(counted) == 4  # nothing in hand: every step


def test_a_crawl_waits_for_the_first_probe_of_a_server_whose_robots_txt_did_not_answer(settings):
    """Its first probe comes within one back-off window, ±10 %: a crawl with the default wait saw that
    window's far end (66 s) as a hold past its 60 s and ended "done" before the probe, or not, by chance."""
    from datetime import timedelta

    from crawlcore.models import Server, ServerHealth
    from crawlcore.services.health import health_hold

    settings.CRAWL_BACKOFF_BASE = 60.0
    server = Server.objects.create(scheme="http", host="quiet.example", port=80)
    Url.objects.create(url="http://quiet.example/a", url_hash="q" * 24, server=server, next_check_at=timezone.now())
    health_hold(server_ids=[server.id], source="robots", reason="robots.txt did not answer")
    ServerHealth.objects.filter(server_id=server.id).update(probe_at=timezone.now() + timedelta(seconds=65.9))
    runner = _runner()  # the crawl command's default wait
    assert runner._progress(0.0)["due"] == 1
