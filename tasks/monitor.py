"""HTTP-status monitoring (queue `monitor`): the checks, and the beat jobs that keep load history.

Workers started with CRAWLER_NUM=n also consume `monitor.c<n>` (crawladmin.celery's pinned-queue hook).
"""

from __future__ import annotations

from celery import shared_task

from monitoring.services.check_dispatch import monitors_dispatch_due
from monitoring.services.checks import monitors_check
from monitoring.services.domains import domains_refresh
from monitoring.services.history import history_prune, load_profiles_build, rollups_build

from .retry import DATABASE_LOST, retry_after_database_loss, skip_without_database


@shared_task(name="tasks.monitor.check_servers", acks_late=True, bind=True)
def check_servers(self, server_ids: list[int]) -> dict:
    """Check the due servers among these ids; ones already claimed or not due are skipped (a duplicate
    or redelivered message writes nothing)."""
    try:
        checked = monitors_check(server_ids=server_ids)
    except DATABASE_LOST as exc:
        # The checks are written in one transaction with their status moves: none of them is stored. A
        # claim that was committed before the loss leaves its servers leased, so the retry skips them and
        # the dispatcher sends them again when the lease expires; servers not claimed yet are checked now.
        raise retry_after_database_loss(self, exc) from exc
    return {"checked": len(checked)}


@shared_task(name="tasks.monitor.dispatch")
def dispatch() -> int | None:
    return skip_without_database("monitor dispatch", monitors_dispatch_due)


@shared_task(name="tasks.monitor.rollup")
def rollup() -> int | None:
    return skip_without_database("monitor rollup", rollups_build)


@shared_task(name="tasks.monitor.load_profiles")
def load_profiles() -> int | None:
    return skip_without_database("load profiles", load_profiles_build)


def _prune() -> dict:
    out = history_prune()
    return {"checks": out.checks, "rollups": out.rollups, "partitions": out.partitions, "evidence": out.evidence}


@shared_task(name="tasks.monitor.prune")
def prune() -> dict | None:
    return skip_without_database("monitor prune", _prune)


def _domains() -> int:
    return len(domains_refresh())


@shared_task(name="tasks.monitor.domains")
def domains() -> int | None:
    """Registration expiry of the monitored domains (RDAP), each asked again once its answer is a day old."""
    return skip_without_database("domain expiry", _domains)
