"""HTTP-status monitoring (queue `monitor`): the checks, and the beat jobs that keep load history."""

from __future__ import annotations

from celery import shared_task

from monitoring.services.checks import monitors_check
from monitoring.services.dispatch import monitors_dispatch_due
from monitoring.services.history import history_prune, load_profiles_build, rollups_build


@shared_task(name="tasks.monitor.check_servers", acks_late=True)
def check_servers(server_ids: list[int]) -> dict:
    """Check the due servers among these ids; ones already claimed or not due are skipped (a duplicate
    or redelivered message writes nothing)."""
    checked = monitors_check(server_ids=server_ids)
    return {"checked": len(checked)}


@shared_task(name="tasks.monitor.dispatch")
def dispatch() -> int:
    return monitors_dispatch_due()


@shared_task(name="tasks.monitor.rollup")
def rollup() -> int:
    return rollups_build()


@shared_task(name="tasks.monitor.load_profiles")
def load_profiles() -> int:
    return load_profiles_build()


@shared_task(name="tasks.monitor.prune")
def prune() -> dict:
    out = history_prune()
    return {"checks": out.checks, "rollups": out.rollups}
