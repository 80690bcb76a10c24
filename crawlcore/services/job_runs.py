"""The record of a job's runs: the open run, the time it spent paused (so its rate counts only the time it was
let run), the samples of its chart, and its close with the figures of what it fetched.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from crawlcore.models import Job, JobRun
from crawlcore.selectors_jobs import job_counts

from .job_events import FINISHED, job_event_tell


def job_done_failed(job_id: int) -> tuple[int, int]:
    c = job_counts(job_id=job_id)
    return c["done"], c["failed"]


def job_run_open(job_id: int) -> JobRun | None:
    return JobRun.objects.filter(job_id=job_id, ended_at__isnull=True).order_by("-started_at").first()


def job_paused_time_close(job_id: int) -> None:
    run = job_run_open(job_id)
    if run is not None and run.paused_at is not None:
        paused = (timezone.now() - run.paused_at).total_seconds()
        JobRun.objects.filter(id=run.id, paused_at=run.paused_at).update(
            paused_at=None, paused_seconds=run.paused_seconds + max(0.0, paused), resumed_at=timezone.now()
        )


def job_run_end(*, job_id: int, reason: str) -> None:
    """Close the job's open run with its figures, and tell job.finished (in the caller's transaction)."""
    run = job_run_open(job_id)
    if run is None:
        return
    job_paused_time_close(job_id)
    job_sample_record(job_id=job_id, force=True)
    run.refresh_from_db()
    done, failed = job_done_failed(job_id)
    now = timezone.now()
    pages, failures = max(0, done - run.done_at_start), max(0, failed - run.failed_at_start)
    if JobRun.objects.filter(id=run.id, ended_at__isnull=True).update(
        ended_at=now, stop_reason=reason[:100], pages=pages, failures=failures
    ):
        run.ended_at, run.stop_reason, run.pages, run.failures = now, reason[:100], pages, failures
        job = Job.objects.get(id=job_id)
        job_event_tell(FINISHED, job=job, run=run, facts={
            "pages": pages, "failures": failures, "seconds": round((now - run.started_at).total_seconds()),
            "stop_reason": reason[:100],
        })  # fmt: skip


SAMPLES_MAX = 400  # a run's chart points; past it, every other older one is dropped
SAMPLE_EVERY = 5.0  # seconds between two of a run's samples at least


def job_sample_record(*, job_id: int, now: datetime | None = None, force: bool = False) -> bool:
    """Add [seconds since the start, done, queued] to the open run's samples (the job page's chart), at most
    every SAMPLE_EVERY seconds unless `force` (the run's last). True when added."""
    now = now or timezone.now()
    run = job_run_open(job_id)
    if run is None:
        return False
    t = round((now - run.started_at).total_seconds(), 1)
    samples = list(run.samples or [])
    if samples and not force and t - samples[-1][0] < SAMPLE_EVERY:
        return False
    c = job_counts(job_id=job_id, now=now)
    samples.append([t, c["done"] - run.done_at_start, c["queued"]])
    if len(samples) > SAMPLES_MAX:
        samples = samples[:-1][::2] + samples[-1:]
    JobRun.objects.filter(id=run.id).update(samples=samples)
    return True


def jobs_sample(*, now: datetime | None = None) -> int:
    """A sample of every running or paused job's run; how many were taken."""
    ids = Job.objects.filter(state__in=[Job.RUNNING, Job.PAUSED]).values_list("id", flat=True)
    return sum(job_sample_record(job_id=i, now=now) for i in ids)
