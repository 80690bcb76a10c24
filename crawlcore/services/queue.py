"""Publishing work to the agents' queues. Always after commit: a task must never run before its rows exist."""

from __future__ import annotations

from collections.abc import Sequence

from celery import current_app
from django.db import transaction

from ..queues import Queue, pinned_queue

LOAD_TASK = "tasks.load.load_server"
EXTRACT_TASK = "tasks.extract.extract_pages"
SCAN_TASKS = {Queue.ACTIVE_SCAN: "tasks.scan.active_scan", Queue.INACTIVE_SCAN: "tasks.scan.inactive_scan"}


def enqueue_load_on_commit(*, server_id: int, crawler_num: int | None, hour: int | None = None) -> None:
    """`hour`: the dispatcher's hour (crawlcore.services.load_dispatch.hour_key); a message from an earlier hour
    is dropped by the worker (seed 000's wait queue, reset at each hour boundary). None: a continuation."""
    queue = pinned_queue(Queue.LOAD, crawler_num)
    args = [server_id] if hour is None else [server_id, hour]
    transaction.on_commit(lambda: current_app.send_task(LOAD_TASK, args=args, queue=queue))


def enqueue_extract_on_commit(*, page_ids: Sequence[int]) -> None:
    ids = list(page_ids)
    if ids:
        transaction.on_commit(lambda: current_app.send_task(EXTRACT_TASK, args=[ids], queue=Queue.EXTRACT.value))


def enqueue_scan_on_commit(*, queue: str, server_id: int, url_ids: Sequence[int], crawler_num: int | None) -> None:
    """`queue` is active_scan or inactive_scan (the scan agent's name is its queue's)."""
    task, ids = SCAN_TASKS[Queue(queue)], list(url_ids)
    transaction.on_commit(
        lambda: current_app.send_task(task, args=[server_id, ids], queue=pinned_queue(queue, crawler_num))
    )


def queue_backlog(name: str) -> int | None:
    """Messages waiting in a queue (not those a worker holds), or None when the broker cannot tell."""
    from django.conf import settings

    if settings.CELERY_EMBEDDED:
        return None
    try:
        with current_app.connection_for_read() as conn:
            return conn.default_channel.queue_declare(queue=name, passive=True).message_count
    except Exception:  # noqa: BLE001 - a broker that is down or a queue not declared yet: unknown
        return None
