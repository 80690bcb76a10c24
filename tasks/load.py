"""The HTML-load agent (queue `load`)."""

from __future__ import annotations

from celery import shared_task

from crawladmin import embedded
from crawlcore.services.leases import worker_identity
from crawlcore.services.load import load_server_batch
from crawlcore.services.load_dispatch import load_dispatch_current

from .retry import DATABASE_LOST, retry_after_database_loss


@shared_task(name="tasks.load.load_server", acks_late=True, bind=True)
def load_server(self, server_id: int, hour: int | None = None) -> dict | None:
    owner = worker_identity()
    try:
        if not load_dispatch_current(server_id=server_id, hour=hour):
            return None  # sent in an earlier hour: the wait queue was reset at the boundary
        outcome = load_server_batch(server_id=server_id, owner=owner, gate=embedded.gate())
    except DATABASE_LOST as exc:
        raise retry_after_database_loss(self, exc, owner=owner) from exc
    return None if outcome is None else {"fetched": outcome.fetched, "failed": outcome.failed}
