"""A crawl job's events through the alert channels: each once a run, routed by the job, its group or all,
in the outbox with the other events; `add_channel --events job.finished` takes them; a message's title names
the job and the event."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from alerts.logic import EventView, kinds_parse, message_compose
from alerts.models import Event, Notification
from alerts.services.channels import channel_add
from crawlcore.models import Job, JobRun, Url
from crawlcore.services.job_budget import budget_take
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_finish, job_pause, job_resume, job_start, job_stop
from crawlcore.services.job_tick import job_stall_check
from crawler.jobrules import job_spec_check


@pytest.fixture(autouse=True)
def no_dispatch(monkeypatch):
    monkeypatch.setattr("crawlcore.services.job_life.servers_dispatch_with_due_work", lambda **kw: 0)
    monkeypatch.setattr("alerts.services.job_events.send_soon_on_commit", lambda delay: None)


def _job(name: str, **keys) -> Job:
    spec, problems = job_spec_check({"name": name, **keys})
    assert not problems, problems
    return job_save(spec=spec)[1]


def _told(kind: str, job: str = "docs") -> list[Event]:
    return list(Event.objects.filter(kind=kind, subject=f"job {job}"))


@pytest.mark.django_db
def test_a_runs_start_and_finish_are_told_once_each_to_the_channels_that_route_them():
    _job("docs", seeds=["http://a.example/"], group="physics")
    _job("other", seeds=["http://b.example/"], group="chemistry")
    every = channel_add(name="all", url="json://127.0.0.1:9/", events="job.started,job.finished").channel
    physics = channel_add(
        name="physics", url="json://127.0.0.1:9/p", group="physics", events="job.started,job.finished,down"
    ).channel
    only = channel_add(name="one", url="json://127.0.0.1:9/o", job="other", events="job.finished").channel
    servers = channel_add(name="servers", url="json://127.0.0.1:9/s", events="down,up").channel
    job_start(name="docs")
    job_pause(name="docs")
    job_resume(name="docs")  # not a new run: nothing more told
    assert job_finish(job_id=Job.objects.get(name="docs").id, reason="done")
    (started,) = _told("job.started")
    (finished,) = _told("job.finished")
    assert "pages" in finished.reason and "stop reason: done" in finished.reason
    assert set(Notification.objects.filter(event=started).values_list("channel_id", flat=True)) == {
        every.id, physics.id}  # fmt: skip
    assert set(Notification.objects.filter(event=finished).values_list("channel_id", flat=True)) == {
        every.id, physics.id}  # fmt: skip
    assert not Notification.objects.filter(channel__in=[only, servers]).exists()
    # A second run is told again; the other job's finish goes to its own rule too.
    job_start(name="docs")
    job_stop(name="docs")
    assert len(_told("job.started")) == 2 and len(_told("job.finished")) == 2
    job_start(name="other")
    job_stop(name="other")
    (other,) = _told("job.finished", "other")
    assert set(Notification.objects.filter(event=other).values_list("channel_id", flat=True)) == {every.id, only.id}


@pytest.mark.django_db
@override_settings(JOBS_STALL_MINUTES=1.0)
def test_a_stall_and_a_used_up_budget_are_told_once_a_run():
    job = _job("docs", seeds=["http://a.example/", "http://a.example/x"], max_pages=3)
    run = job_start(name="docs")
    assert budget_take(job_id=job.id, want=5, max_pages=3) == 1
    assert budget_take(job_id=job.id, want=5, max_pages=3) == 0
    assert len(_told("job.budget_reached")) == 1
    later = timezone.now() + timedelta(minutes=2)
    JobRun.objects.filter(id=run.id).update(started_at=timezone.now() - timedelta(minutes=3))
    Job.objects.filter(id=job.id).update(updated_at=timezone.now() - timedelta(minutes=3))
    job.refresh_from_db()
    assert Url.objects.filter(url="http://a.example/x", exclusion_reason="").exists()
    assert job_stall_check(job=job, now=later)
    assert not job_stall_check(job=job, now=later + timedelta(minutes=5))
    (stalled,) = _told("job.stalled")
    assert stalled.reason.startswith("no page done since")


@pytest.mark.django_db
def test_add_channel_takes_the_job_events_and_refuses_a_job_that_does_not_exist():
    _job("docs", seeds=["http://a.example/"])
    out = io.StringIO()
    call_command("add_channel", "hook", "json://127.0.0.1:9/", "--events", "job.started,job.finished,job.stalled,"
                 "job.budget_reached", "--job", "docs", stdout=out)  # fmt: skip
    assert "job docs" in out.getvalue()
    assert kinds_parse("job.stalled") == ("job.stalled",)
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no crawl job named 'nope'"):
        call_command("add_channel", "x", "json://127.0.0.1:9/", "--job", "nope")


def test_a_messages_title_names_the_job_and_the_event():
    views = [EventView(1, "job.finished", "job docs", "", "2026-01-01T00:00:00+00:00", reason="20 pages")]
    assert message_compose(views, key="k").title == "[crawladmin] job docs job.finished"
    two = views + [EventView(2, "job.started", "job news", "", "2026-01-01T00:00:01+00:00")]
    title = message_compose(two, key="k").title
    assert "job docs job.finished" in title and "job news job.started" in title


@pytest.mark.django_db
def test_a_yaml_channel_rule_takes_the_job_events_for_a_group():
    from crawladmin.configfile.apply import config_apply

    text = """\
servers:
  - url: http://a.example/
    group: physics
channels:
  - name: hook
    url: json://127.0.0.1:9/jobs
    rules:
      - kinds: job.started,job.finished,job.stalled,job.budget_reached
        group: physics
"""
    assert ("created", "channel", "hook") in config_apply(text)
    _job("docs", seeds=["http://a.example/"], group="physics")
    job_start(name="docs")
    (started,) = _told("job.started")
    assert Notification.objects.filter(event=started, channel__name="hook").count() == 1
