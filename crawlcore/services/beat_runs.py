"""The record of how long beat's jobs take (BeatJobRun): written by the worker after each run of a job of
crawlcore.beat's table, read by the dashboard's crawl page and /metrics.

Alerts sits above the crawl core and cannot be imported here: it registers a function with `on_run_recorded`
(from its AppConfig.ready()), called with each run's row once it is written, and raises or resolves its
alert for a job that outlasts its period."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import DatabaseError
from django.db.models import F
from django.db.models.functions import Greatest

from ..beat import beat_job_of_task
from ..models import BeatJobRun

log = logging.getLogger(__name__)

RunHook = Callable[[BeatJobRun], None]
_run_hooks: list[RunHook] = []


def on_run_recorded(hook: RunHook) -> None:
    if hook not in _run_hooks:
        _run_hooks.append(hook)


def _told(row: BeatJobRun) -> BeatJobRun:
    """Hand the recorded run to the hooks. The record is a report: a hook that fails is logged, and the job's
    run stands."""
    for hook in _run_hooks:
        try:
            hook(row)
        except Exception:
            log.exception("beat job %r: a hook on its recorded run failed", row.name)
    return row


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
            return _told(BeatJobRun.objects.get(name=job.name))
        row, created = BeatJobRun.objects.get_or_create(
            name=job.name, defaults={**values, "runs": 1, "over_period": int(over), "max_seconds": seconds}
        )
        if not created:  # another worker created it between our update and our insert: count this run too
            return beat_run_record(task=task, started_at=started_at, seconds=seconds, ok=ok)
        return _told(row)
    except (DatabaseError, RuntimeError) as exc:  # the record is a report, never a reason for the job to fail
        log.warning("beat job %r: its run was not recorded (%s)", job.name, exc)
        return None
