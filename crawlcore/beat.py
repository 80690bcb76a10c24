"""Every beat job of the system in one table, and the one helper the data migrations call to put them in
django-celery-beat's database schedule (editable in the admin).

The table names tasks of the apps above the crawl core (monitoring, ranking, alerts, dashboard) only as strings:
it imports none of them, and it is the one place an operator or a newcomer reads the whole schedule.

A migration is history: each one names the jobs it created, and the helper creates a missing job from this
table with get_or_create, so a second `migrate`, or one after an operator changed an interval or disabled a
job, leaves their edit alone. Changing a job here therefore changes only fresh databases; an existing one
needs a new data migration (or the admin).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import migrations

from .queues import Queue

PERIOD_SECONDS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


@dataclass(frozen=True)
class BeatJob:
    name: str  # the PeriodicTask's unique name, as an operator sees it in the admin
    task: str  # the Celery task's registered name
    every: int
    queue: Queue
    period: str = "seconds"  # django-celery-beat's IntervalSchedule period

    @property
    def seconds(self) -> int:
        return self.every * PERIOD_SECONDS[self.period]


BEAT_JOBS: tuple[BeatJob, ...] = (
    # crawl core (crawlcore/migrations 0002, 0003)
    BeatJob("crawladmin: dispatch due servers", "tasks.housekeeping.dispatch", 5, Queue.HOUSEKEEPING),
    BeatJob("crawladmin: reconcile leases and lost messages", "tasks.housekeeping.reconcile", 60, Queue.HOUSEKEEPING),
    BeatJob("crawladmin: sweep Visited URLs to the active scan", "tasks.scan.sweep_active", 60, Queue.HOUSEKEEPING),
    BeatJob(
        "crawladmin: sweep due NoResponse URLs to the inactive scan",
        "tasks.scan.sweep_inactive",
        60,
        Queue.HOUSEKEEPING,
    ),
    # crawl core (crawlcore/migrations 0012): status-check partitions made ahead of time (PostgreSQL)
    BeatJob(
        "crawladmin: status-check partitions ahead", "tasks.housekeeping.check_partitions", 3600, Queue.HOUSEKEEPING
    ),
    # crawl core (crawlcore/migrations 0018): the archive's old error bodies dropped (ARCHIVE_KEEP_ERROR_BODIES_DAYS)
    BeatJob(
        "crawladmin: drop old archived error bodies",
        "tasks.housekeeping.drop_exchange_bodies",
        1,
        Queue.HOUSEKEEPING,
        period="days",
    ),
    # crawl core (crawlcore/migrations 0021): crawl jobs' schedules, windows and ends
    BeatJob("crawladmin: crawl jobs' schedules and windows", "tasks.housekeeping.jobs_tick", 30, Queue.HOUSEKEEPING),
    # crawl core (crawlcore/migrations 0036): the pages' full-text vectors, in batches (SEARCH_INDEX_DELAY)
    BeatJob("crawladmin: search index", "tasks.housekeeping.search_index", 2, Queue.HOUSEKEEPING),
    # monitoring (monitoring/migrations 0002)
    BeatJob("monitoring: dispatch due server checks", "tasks.monitor.dispatch", 10, Queue.MONITOR),
    BeatJob("monitoring: hourly rollups", "tasks.monitor.rollup", 300, Queue.MONITOR),
    BeatJob("monitoring: 24-hour load profiles", "tasks.monitor.load_profiles", 3600, Queue.MONITOR),
    BeatJob("monitoring: prune old checks and rollups", "tasks.monitor.prune", 86400, Queue.MONITOR),
    # monitoring (monitoring/migrations 0010): domains' registration expiry, answers kept MONITOR_RDAP_CACHE_HOURS
    BeatJob("monitoring: domain expiry (RDAP)", "tasks.monitor.domains", 1, Queue.MONITOR, period="hours"),
    # ranking (ranking/migrations 0002): daily
    BeatJob("ranking: BlockRank the crawl's link graph", "tasks.rank.rank_crawl", 1, Queue.HOUSEKEEPING, period="days"),
    # alerts (alerts/migrations 0002): the outbox sender, and recurring maintenance windows written ahead
    BeatJob("alerts: send notifications", "tasks.alerts.send", 10, Queue.HOUSEKEEPING),
    BeatJob("alerts: write recurring maintenance windows", "tasks.alerts.maintenance", 600, Queue.HOUSEKEEPING),
    # alerts (alerts/migrations 0006): freshness objectives' hours recorded, and their burn alerts
    BeatJob("alerts: freshness hours and burn alerts", "tasks.alerts.freshness", 600, Queue.HOUSEKEEPING),
    # dashboard (dashboard/migrations 0003)
    BeatJob("dashboard: check totals and server figures", "tasks.dashboard.refresh_rollups", 60, Queue.HOUSEKEEPING),
    BeatJob("dashboard: dead links", "tasks.dashboard.refresh_dead_links", 300, Queue.HOUSEKEEPING),
    # link reports (reports/migrations 0002): the owners' weekly digests. The record of broken links is brought
    # up to date with the dashboard's dead-link report ("dashboard: dead links"), by every export and digest.
    BeatJob("reports: owners' digests", "tasks.reports.send_digests", 7, Queue.HOUSEKEEPING, period="days"),
    # reports (reports/migrations 0004): last month's uptime / SLA report to each owner, once (checked daily)
    BeatJob(
        "reports: owners' monthly SLA reports", "tasks.reports.send_sla_reports", 1, Queue.HOUSEKEEPING, period="days"
    ),
)

_BY_NAME = {job.name: job for job in BEAT_JOBS}
_BY_TASK = {job.task: job for job in BEAT_JOBS}


def beat_job_of_task(task: str) -> BeatJob | None:
    """The beat job that sends Celery task `task`, or None for a task beat does not send."""
    return _BY_TASK.get(task)


def beat_job(task: str) -> BeatJob:
    """The beat job that runs this Celery task (each task has one)."""
    return _BY_TASK[task]


def _jobs(names: Iterable[str]) -> list[BeatJob]:
    unknown = [name for name in names if name not in _BY_NAME]
    if unknown:
        raise KeyError(f"not in crawlcore.beat.BEAT_JOBS: {unknown}")
    return [_BY_NAME[name] for name in names]


def beat_jobs_ensure(apps: Any, names: Iterable[str]) -> None:
    """Create the named jobs that do not exist yet (a migration's forward step, with its historical models)."""
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    for job in _jobs(names):
        interval, _ = interval_model.objects.get_or_create(every=job.every, period=job.period)
        task_model.objects.get_or_create(
            name=job.name, defaults={"task": job.task, "interval": interval, "queue": job.queue, "enabled": True}
        )


def beat_jobs_remove(apps: Any, names: Iterable[str]) -> None:
    """Delete the named jobs (a migration's backward step)."""
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    task_model.objects.filter(name__in=[job.name for job in _jobs(names)]).delete()


def beat_jobs_migration(*names: str) -> migrations.RunPython:
    """The RunPython operation of a beat-job data migration: ensure the named jobs, remove them on reverse."""
    _jobs(names)  # an unknown name fails when the migration is loaded, not half-way through migrate
    # partial, not lambdas: a squashmigrations can serialise a module-level function with its arguments.
    return migrations.RunPython(partial(_forward, names), partial(_backward, names))


def _forward(names: tuple[str, ...], apps: Any, schema_editor: Any) -> None:
    beat_jobs_ensure(apps, names)


def _backward(names: tuple[str, ...], apps: Any, schema_editor: Any) -> None:
    beat_jobs_remove(apps, names)
