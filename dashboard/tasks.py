"""The dashboard's beat jobs (queue `housekeeping`; schedule in dashboard/migrations/0003_periodic_tasks.py):
thin shells over dashboard.rollups. Imported by DashboardConfig.ready(), so every worker registers them."""

from __future__ import annotations

from celery import shared_task

from tasks.retry import skip_without_database

from . import rollups


@shared_task(name="dashboard.tasks.refresh_rollups")
def refresh_rollups() -> dict | None:
    return skip_without_database("dashboard rollups", rollups.rollups_refresh)


@shared_task(name="dashboard.tasks.refresh_dead_links")
def refresh_dead_links() -> dict | None:
    return skip_without_database("dashboard dead links", rollups.dead_links_refresh)
