"""The dashboard's beat jobs (queue `housekeeping`; their rows come from crawlcore/beat.py):
thin shells over dashboard.rollups. Their names stay `dashboard.tasks.*` (the beat rows name them); the
Celery app imports this module with the other tasks/ modules (crawladmin/celery.py)."""

from __future__ import annotations

from celery import shared_task

from dashboard import rollups
from tasks.retry import skip_without_database


@shared_task(name="dashboard.tasks.refresh_rollups")
def refresh_rollups() -> dict | None:
    return skip_without_database("dashboard rollups", rollups.rollups_refresh)


@shared_task(name="dashboard.tasks.refresh_dead_links")
def refresh_dead_links() -> dict | None:
    return skip_without_database("dashboard dead links", rollups.dead_links_refresh)
