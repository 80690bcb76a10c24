"""The jobs' periodic work (beat, and each step of a command crawl): the scheduled and revisiting jobs started
when due, the URLs of running jobs held or released at their windows' edges, the runs that have nothing left
closed, and a run that does not move told stalled. One job's failure never stops the others' steps.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from crawlcore.models import Job, JobRun, Url
from crawlcore.selectors_jobs import job_counts, job_stalled
from crawler import jobrules
from crawler.lifecycle import State

from .job_events import STALLED, job_event_tell
from .job_hold import job_hold, job_unhold, job_url_ids
from .job_life import JobError, job_finish, job_start, servers_dispatch_soon
from .job_runs import job_run_open, jobs_sample

log = logging.getLogger(__name__)


def jobs_tick(*, now: datetime | None = None) -> dict[str, int]:
    """The jobs' periodic work (beat, and each step of a command crawl): start the scheduled ones that are
    due, hold or release the URLs of jobs at their windows' edges, close the runs that have nothing left."""
    now = now or timezone.now()
    out = {"started": 0, "finished": 0}
    revisits = Job.objects.filter(enabled=True, schedule="", revisit_after__isnull=False, state=Job.IDLE)
    for job in revisits:
        out["started"] += _guarded(job, "revisit", lambda job=job: _revisit_due(job, now))
    for job in Job.objects.filter(enabled=True).exclude(schedule="").exclude(state__in=[Job.RUNNING, Job.PAUSED]):
        out["started"] += _guarded(job, "schedule", lambda job=job: _schedule_due(job, now))
    jobs_sample(now=now)
    for job in Job.objects.filter(state=Job.RUNNING):
        out["finished"] += _guarded(job, "window", lambda job=job: _window_edge(job, now))
    return out


def _guarded(job: Job, step: str, fn) -> int:
    """One job's step of the tick: whatever goes wrong with this job (a schedule that never comes, a time
    zone gone from the system) is logged and moves it forward, and the other jobs' steps still run."""
    try:
        with transaction.atomic():
            return int(fn())
    except JobError as exc:
        log.info("%s of job %s skipped: %s", step, job.name, exc)
    except Exception:
        log.exception("%s of job %s failed; the other jobs go on", step, job.name)
    if step == "schedule":
        # Its next start unknown: asked again in a day, not at every tick.
        Job.objects.filter(id=job.id).update(next_run_at=timezone.now() + timedelta(days=1))
    return 0


def _revisit_due(job: Job, now: datetime) -> bool:
    last = JobRun.objects.filter(job_id=job.id).order_by("-started_at").values_list("ended_at", flat=True).first()
    if last is None or (now - last).total_seconds() < (job.revisit_after or 0):
        return False
    job_start(name=job.name, trigger="revisit")
    return True


def _schedule_due(job: Job, now: datetime) -> bool:
    if job.next_run_at is None:
        nxt = job.next_start(now)
        Job.objects.filter(id=job.id, next_run_at__isnull=True).update(next_run_at=nxt)
        return False
    if job.next_run_at > now:
        return False
    nxt = job.next_start(now)
    if not Job.objects.filter(id=job.id, next_run_at=job.next_run_at).update(next_run_at=nxt):
        return False  # another tick took this start
    try:
        job_start(name=job.name, trigger="schedule")
    except JobError as exc:
        log.info("scheduled start of %s skipped: %s (next %s)", job.name, exc, nxt)
        return False
    return True


def _window_edge(job: Job, now: datetime) -> bool:
    inside = job.in_window(now)
    if inside:
        servers = job_unhold(job_id=job.id, reasons=[jobrules.OUTSIDE_WINDOW])
        servers_dispatch_soon(servers)
    else:
        job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    c = job_counts(job_id=job.id, now=now)
    if inside and c["queued"] == 0 and c["fetching"] == 0 and c["unextracted"] == 0:
        return job_finish(job_id=job.id, reason="done")
    if inside:
        job_stall_check(job=job, now=now)
    return False


def job_stall_check(*, job: Job, now: datetime) -> bool:
    """Tell job.stalled once a run: running, inside its window, URLs queued, and no page done for
    JOBS_STALL_MINUTES (since the run started or was resumed). True when told now."""
    run = job_run_open(job.id)
    if run is None or run.stalled_at is not None or run.paused_at is not None:
        return False
    quiet = timedelta(minutes=settings.JOBS_STALL_MINUTES)
    last = (
        Url.objects.filter(id__in=job_url_ids(job.id), last_checked_at__gte=run.started_at)
        .exclude(state=State.INIT.value)
        .aggregate(last=Max("last_checked_at"))["last"]
    )
    since = max(t for t in (last, run.started_at, job.updated_at) if t is not None)
    if now - since < quiet or job_counts(job_id=job.id, now=now)["queued"] == 0:
        return False
    reasons = job_stalled(job=job, now=now)
    with transaction.atomic():
        if not JobRun.objects.filter(id=run.id, stalled_at__isnull=True).update(stalled_at=now):
            return False  # another tick told it
        run.stalled_at = now
        job_event_tell(STALLED, job=job, run=run, facts={"since": since.isoformat(), "reasons": reasons})
    return True
