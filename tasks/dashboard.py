"""The dashboard's beat jobs (queue `housekeeping`; their rows come from crawlcore/beat.py): thin shells over
dashboard.rollups, named `tasks.dashboard.*` after this module like every other task in tasks/. The Celery app
imports this module with the other tasks/ modules (crawladmin/celery.py).

Until this module's tasks were renamed they were called `dashboard.tasks.*`, and a database's beat rows and any
message queued before an upgrade still carry those names: dashboard migration 0010 renames the rows, and the old
names stay registered here for one release so that such a message still runs."""

from __future__ import annotations

from celery import shared_task

from dashboard import rollups
from tasks.retry import skip_without_database


def _refresh_rollups() -> dict | None:
    return skip_without_database("dashboard rollups", rollups.rollups_refresh)


def _refresh_dead_links() -> dict | None:
    return skip_without_database("dashboard dead links", rollups.dead_links_refresh)


refresh_rollups = shared_task(name="tasks.dashboard.refresh_rollups")(_refresh_rollups)
refresh_dead_links = shared_task(name="tasks.dashboard.refresh_dead_links")(_refresh_dead_links)

# The names of before the rename, for the messages already queued under them. Remove in the next release.
OLD_NAMES = {
    "dashboard.tasks.refresh_rollups": shared_task(name="dashboard.tasks.refresh_rollups")(_refresh_rollups),
    "dashboard.tasks.refresh_dead_links": shared_task(name="dashboard.tasks.refresh_dead_links")(_refresh_dead_links),
}
