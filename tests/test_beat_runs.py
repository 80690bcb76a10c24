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


# --------------------------------------------------------------------------------------------------
# A job that outlasts its period is alerted, once, and resolved when it fits again


def test_a_job_over_its_period_raises_one_alert_and_resolves_it_when_it_fits_again():
    from datetime import timedelta

    from alerts.models import Event, Notification
    from alerts.services.channels import channel_add
    from alerts.services.send import notifications_send
    from crawlcore.models import Server
    from testweb.alerts import webhook_receiver

    def run(seconds: float) -> None:  # what CrawlTask.__call__ records after each run of the job (every 5 s)
        beat_run_record(task="tasks.housekeeping.dispatch", started_at=timezone.now(), seconds=seconds, ok=True)

    with webhook_receiver() as rx:
        channel_add(name="ops", url=f"{rx.base}/ops")  # every kind of all servers' events
        Server.objects.create(scheme="http", host="a.example", port=80, group="campus")
        channel_add(name="campus", url=f"{rx.base}/campus", group="campus")  # a group's: no beat job's
        run(2.0)
        assert not Event.objects.exists()  # on time and never late: nothing to tell
        run(7.5)
        run(9.0)  # still late: the alert is raised already
        assert list(Event.objects.values_list("kind", "to_status")) == [("beat", "late")]
        sent = notifications_send(now=timezone.now() + timedelta(hours=1))
        assert [(s.channel, s.events, s.ok) for s in sent] == [("ops", 1, True)]
        late = rx.received[-1].body
        assert late["title"] == "[crawladmin] beat job 'crawladmin: dispatch due servers' late"
        assert "its last run took 7.5 s; it runs every 5 s" in late["message"]
        run(1.0)
        run(1.5)  # on time again, told once
        assert list(Event.objects.order_by("id").values_list("to_status", flat=True)) == ["late", "normal"]
        notifications_send(now=timezone.now() + timedelta(hours=2))
        assert rx.received[-1].body["title"] == "[crawladmin] beat job 'crawladmin: dispatch due servers' on time again"
        assert len(rx.received) == 2 and {r.path for r in rx.received} == {"/ops"}
        run(6.0)  # late once more: a new alert
        assert Event.objects.filter(to_status="late").count() == 2
        assert set(Notification.objects.values_list("channel__name", flat=True)) == {"ops"}
