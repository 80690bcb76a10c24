"""The record of how long beat's jobs take (BeatJobRun): written by the worker after each run of a job of
crawlcore.beat's table, read by the dashboard's crawl page and /metrics."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import DatabaseError
from django.db.models import F
from django.db.models.functions import Greatest

from ..beat import beat_job_of_task
from ..models import BeatJobRun

log = logging.getLogger(__name__)


def beat_run_record(*, task: str, started_at: datetime, seconds: float, ok: bool) -> BeatJobRun | None:
    """Record one run of the beat job whose Celery task is `task` (None: not a beat job). One upsert a run;
    a database that is gone loses the record of this run only, never the job's work."""
    job = beat_job_of_task(task)
    if job is None:
        return None
    over = seconds > job.seconds
    if over:
        log.warning(
            "beat job %r took %.1f s, longer than its period of %d s: it falls behind", job.name, seconds, job.seconds
        )
    values = dict(task=task, period_seconds=job.seconds, last_started_at=started_at, last_seconds=seconds, last_ok=ok)
    try:
        updated = BeatJobRun.objects.filter(name=job.name).update(
            **values,
            runs=F("runs") + 1,
            over_period=F("over_period") + int(over),
            max_seconds=Greatest("max_seconds", seconds),
        )
        if updated:
            return BeatJobRun.objects.get(name=job.name)
        row, created = BeatJobRun.objects.get_or_create(
            name=job.name, defaults={**values, "runs": 1, "over_period": int(over), "max_seconds": seconds}
        )
        if not created:  # another worker created it between our update and our insert: count this run too
            return beat_run_record(task=task, started_at=started_at, seconds=seconds, ok=ok)
        return row
    except (DatabaseError, RuntimeError) as exc:  # the record is a report, never a reason for the job to fail
        log.warning("beat job %r: its run was not recorded (%s)", job.name, exc)
        return None
