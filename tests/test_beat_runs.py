"""Every beat job's run is timed and recorded (crawlcore.services.beat_runs): its last and slowest run, and the
runs that took longer than the job's period, shown on the crawl page and in /metrics."""

from __future__ import annotations

import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

import tasks.housekeeping as housekeeping
from crawlcore.beat import beat_job_of_task
from crawlcore.models import BeatJobRun
from crawlcore.services.beat_runs import beat_run_record
from dashboard import cache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def test_a_beat_task_run_through_celery_is_recorded_and_other_tasks_are_not():
    task = housekeeping.reconcile_leases
    task.apply()  # through CrawlTask.__call__, as a worker runs it
    row = BeatJobRun.objects.get(task="tasks.housekeeping.reconcile")
    assert row.runs == 1 and row.last_ok and row.period_seconds == beat_job_of_task(row.task).seconds
    assert 0 <= row.last_seconds < 60 and row.max_seconds == row.last_seconds
    task.apply()
    assert BeatJobRun.objects.get(pk=row.pk).runs == 2
    assert beat_run_record(task="tasks.load.batch", started_at=timezone.now(), seconds=1.0, ok=True) is None
    assert BeatJobRun.objects.count() == 1


def test_a_run_longer_than_its_period_is_counted_and_shown(client):
    now = timezone.now()
    beat_run_record(task="tasks.housekeeping.dispatch", started_at=now, seconds=2.0, ok=True)  # every 5 s
    late = beat_run_record(task="tasks.housekeeping.dispatch", started_at=now, seconds=7.5, ok=False)
    assert late.late and late.over_period == 1 and late.max_seconds == 7.5 and not late.last_ok
    again = beat_run_record(task="tasks.housekeeping.dispatch", started_at=now, seconds=1.0, ok=True)
    assert not again.late and again.max_seconds == 7.5 and again.runs == 3

    client.force_login(get_user_model().objects.create_superuser("root", password="pw-not-secret-at-all"))
    page = client.get("/dashboard/crawl/").content.decode()
    assert 'id="beat-jobs"' in page and "crawladmin: dispatch due servers" in page
    metrics = client.get("/metrics").content.decode()
    job = 'job="crawladmin: dispatch due servers"'
    assert re.search(rf"^crawladmin_beat_job_over_period_runs\{{{job}\}} 1$", metrics, re.M)
    assert re.search(rf"^crawladmin_beat_job_period_seconds\{{{job}\}} 5$", metrics, re.M)


def test_a_beat_job_that_raises_is_recorded_as_failed(monkeypatch):
    def boom(**kwargs):
        time.sleep(0.01)
        raise RuntimeError("reconcile failed")

    monkeypatch.setattr(housekeeping, "_reconcile", boom)
    result = housekeeping.reconcile_leases.apply()
    assert result.failed()
    row = BeatJobRun.objects.get(task="tasks.housekeeping.reconcile")
    assert row.runs == 1 and not row.last_ok
