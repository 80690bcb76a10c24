"""Publishing work to the agents' queues. Always after commit: a task must never run before its rows exist."""

from __future__ import annotations

from collections.abc import Sequence

from celery import current_app
from django.db import transaction

LOAD_TASK = "tasks.load.load_server"
EXTRACT_TASK = "tasks.extract.extract_pages"


def load_queue(crawler_num: int | None) -> str:
    """Pinned servers go to the queue only workers started with that CRAWLER_NUM consume."""
    return "load" if crawler_num is None else f"load.c{crawler_num}"


def enqueue_load_on_commit(*, server_id: int, crawler_num: int | None) -> None:
    transaction.on_commit(lambda: current_app.send_task(LOAD_TASK, args=[server_id], queue=load_queue(crawler_num)))


def enqueue_extract_on_commit(*, page_ids: Sequence[int]) -> None:
    ids = list(page_ids)
    if ids:
        transaction.on_commit(lambda: current_app.send_task(EXTRACT_TASK, args=[ids], queue="extract"))
