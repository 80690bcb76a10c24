"""Publishing work to the agents' queues. Always after commit: a task must never run before its rows exist."""

from __future__ import annotations

from collections.abc import Sequence

from celery import current_app
from django.db import transaction

LOAD_TASK = "tasks.load.load_server"
EXTRACT_TASK = "tasks.extract.extract_pages"
SCAN_TASKS = {"active_scan": "tasks.scan.active_scan", "inactive_scan": "tasks.scan.inactive_scan"}
# Queues whose work goes to a server: a server pinned to a crawler number gets them on that machine only.
SERVER_QUEUES = ("load", *SCAN_TASKS)


def pinned_queue(queue: str, crawler_num: int | None) -> str:
    """Pinned servers' work goes to a queue only workers started with that CRAWLER_NUM consume."""
    return queue if crawler_num is None else f"{queue}.c{crawler_num}"


def load_queue(crawler_num: int | None) -> str:
    return pinned_queue("load", crawler_num)


def enqueue_load_on_commit(*, server_id: int, crawler_num: int | None) -> None:
    transaction.on_commit(lambda: current_app.send_task(LOAD_TASK, args=[server_id], queue=load_queue(crawler_num)))


def enqueue_extract_on_commit(*, page_ids: Sequence[int]) -> None:
    ids = list(page_ids)
    if ids:
        transaction.on_commit(lambda: current_app.send_task(EXTRACT_TASK, args=[ids], queue="extract"))


def enqueue_scan_on_commit(*, queue: str, server_id: int, url_ids: Sequence[int], crawler_num: int | None) -> None:
    """`queue` is "active_scan" or "inactive_scan" (the agent's name)."""
    task, ids = SCAN_TASKS[queue], list(url_ids)
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
