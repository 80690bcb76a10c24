"""The HTML-load agent (queue `load`)."""

from __future__ import annotations

from celery import shared_task

from crawladmin import embedded
from crawladmin.services.common import worker_identity
from crawladmin.services.load import load_server_batch


@shared_task(name="tasks.load.load_server", acks_late=True)
def load_server(server_id: int) -> dict | None:
    outcome = load_server_batch(server_id=server_id, owner=worker_identity(), gate=embedded.gate())
    return None if outcome is None else {"fetched": outcome.fetched, "failed": outcome.failed}
