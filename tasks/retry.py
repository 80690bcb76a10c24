"""What a task does when the database goes away under it (a PostgreSQL restart or failover).

The task's own transaction rolled back, so nothing half-done is stored; what it still holds is leases.
Given back as soon as the database answers again, its work is free at once instead of after
CRAWL_LEASE_SECONDS; then the task is retried with a fresh connection. If the database stays away, the
leases expire and the reconciler frees them: the work is late, never lost.
"""

from __future__ import annotations

import logging
import time

from celery import Task
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from crawlcore.services.load_dispatch import leases_release_owner

log = logging.getLogger("tasks")

# The errors of a lost or refused connection (psycopg2's, wrapped by Django). Not DatabaseError as a
# whole: a constraint or a bad query is a bug, and retrying it would only repeat it.
DATABASE_LOST = (OperationalError, InterfaceError)
RELEASE_WAIT = 20.0  # seconds spent trying to give the leases back before leaving them to expire
RETRY_COUNTDOWN = 2
MAX_RETRIES = 10


def _reconnect() -> None:
    try:
        connection.close()  # the broken one; Django opens a new one on the next query
    except DatabaseError:
        pass


def release_when_back(owner: str, *, wait: float = RELEASE_WAIT) -> bool:
    deadline = time.monotonic() + wait
    while True:
        _reconnect()
        try:
            leases_release_owner(owner=owner)
            return True
        except DATABASE_LOST:
            if time.monotonic() > deadline:
                return False
            time.sleep(1.0)


def retry_after_database_loss(task: Task, exc: Exception, *, owner: str | None = None):
    """Give back `owner`'s leases (if any), then retry the task. Use as `raise retry_after_...(...)`."""
    log.warning("%s[%s]: database connection lost (%s); retrying", task.name, task.request.id, exc)
    if owner is not None and not release_when_back(owner):
        log.warning("%s: database still away; leases of %s left to expire", task.name, owner)
    else:
        _reconnect()
    return task.retry(exc=exc, countdown=RETRY_COUNTDOWN, max_retries=MAX_RETRIES)


def skip_without_database(job: str, fn, /, **kwargs):
    """A periodic job (beat sends it again in seconds): without a database, skip this round quietly."""
    try:
        return fn(**kwargs)
    except DATABASE_LOST as exc:
        log.warning("%s skipped: database connection lost (%s)", job, exc)
        _reconnect()
        return None
