"""Beat jobs (queue `housekeeping`): the dispatcher and the reconciler."""

from __future__ import annotations

from celery import shared_task

from crawladmin.services.dispatch import dispatch_due, reconcile


@shared_task(name="tasks.housekeeping.dispatch")
def dispatch() -> int:
    return dispatch_due()


@shared_task(name="tasks.housekeeping.reconcile")
def reconcile_leases() -> dict:
    out = reconcile()
    return {"url_leases": out.url_leases, "server_leases": out.server_leases, "extracts": out.extracts}
