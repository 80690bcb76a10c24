"""The active- and inactive-scan agents (queues `active_scan`, `inactive_scan`) and their beat sweeps
(queue `housekeeping`)."""

from __future__ import annotations

from celery import shared_task

from crawladmin import embedded
from crawlcore.services.leases import worker_identity
from crawlcore.services.scan import scan_server_batch
from crawlcore.services.sweep import scan_sweep
from crawler.lifecycle import Agent

from .retry import DATABASE_LOST, retry_after_database_loss, skip_without_database


def _scan(task, agent: Agent, server_id: int, url_ids: list[int]) -> dict | None:
    owner, gate = worker_identity(), embedded.gate()
    try:
        outcome = scan_server_batch(agent=agent, server_id=server_id, url_ids=url_ids, owner=owner, gate=gate)
    except DATABASE_LOST as exc:
        # The URLs given back are not the sweep's any more: the retry finds none of them and ends, and
        # the next sweep sends them again.
        raise retry_after_database_loss(task, exc, owner=owner) from exc
    if outcome is None:
        return None
    return {"checked": outcome.checked, "reload": outcome.reload, "failed": outcome.failed}


@shared_task(name="tasks.scan.active_scan", acks_late=True, bind=True)
def active_scan(self, server_id: int, url_ids: list[int]) -> dict | None:
    return _scan(self, Agent.ACTIVE_SCAN, server_id, url_ids)


@shared_task(name="tasks.scan.inactive_scan", acks_late=True, bind=True)
def inactive_scan(self, server_id: int, url_ids: list[int]) -> dict | None:
    return _scan(self, Agent.INACTIVE_SCAN, server_id, url_ids)


@shared_task(name="tasks.scan.sweep_active")
def sweep_active() -> int | None:
    return skip_without_database("sweep_active", scan_sweep, agent=Agent.ACTIVE_SCAN)


@shared_task(name="tasks.scan.sweep_inactive")
def sweep_inactive() -> int | None:
    return skip_without_database("sweep_inactive", scan_sweep, agent=Agent.INACTIVE_SCAN)
