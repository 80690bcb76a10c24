"""The Celery queues, in one table: their names, which of them a server can be pinned on, the one rule
that names a pinned queue, and which task goes to which queue.

The names are a contract with the outside: docker/ start scripts, operators' `celery worker -Q …` lines
and Flower read them, so they never change. No Django or Celery import: the settings module reads the
route table from here.
"""

from __future__ import annotations

import enum
import re


class Queue(enum.StrEnum):
    """The agents' queues, the beat jobs' queue and the monitor's."""

    LOAD = "load"
    EXTRACT = "extract"
    ACTIVE_SCAN = "active_scan"
    INACTIVE_SCAN = "inactive_scan"
    HOUSEKEEPING = "housekeeping"  # beat jobs: dispatcher, reconciler, sweeps, rollups, ranking
    MONITOR = "monitor"
    RENDER = "render"  # headless Chromium for pages built by JavaScript (crawlcore.services.render)


# Celery's default queue: a task with no route is a small periodic job.
DEFAULT_QUEUE = Queue.HOUSEKEEPING

# The crawl agents' queues whose work is one server's: a server pinned to a crawler number has its work
# sent to the pinned variant of these.
SERVER_QUEUES = (Queue.LOAD, Queue.ACTIVE_SCAN, Queue.INACTIVE_SCAN)
# Every queue with pinned variants: the crawl agents' and the monitor's (seed 002's crawler numbers).
PINNABLE = (*SERVER_QUEUES, Queue.MONITOR)

_PINNED = re.compile(rf"^(?:{'|'.join(q.value for q in PINNABLE)})\.c(\d+)$")


def pinned_queue(queue: Queue | str, crawler_num: int | None) -> str:
    """The queue for work of a server pinned to `crawler_num` (None: not pinned). Only workers started
    with that CRAWLER_NUM consume `<queue>.c<n>`, besides the plain queue."""
    return str(queue) if crawler_num is None else f"{queue}.c{crawler_num}"


def crawler_num_of(queue: str) -> int | None:
    """The crawler number a pinned queue's name carries; None for any other name."""
    m = _PINNED.match(queue)
    return int(m.group(1)) if m else None


# Task name (glob) -> queue. Celery tries the patterns in order: the specific scan tasks before the
# sweeps' pattern.
TASK_ROUTES: dict[str, Queue] = {
    "tasks.scan.active_scan": Queue.ACTIVE_SCAN,
    "tasks.scan.inactive_scan": Queue.INACTIVE_SCAN,
    "tasks.scan.sweep_*": Queue.HOUSEKEEPING,
    "tasks.load.*": Queue.LOAD,
    "tasks.extract.*": Queue.EXTRACT,
    "tasks.render.*": Queue.RENDER,
    "tasks.housekeeping.*": Queue.HOUSEKEEPING,
    "tasks.monitor.*": Queue.MONITOR,
    "tasks.rank.*": Queue.HOUSEKEEPING,
    "tasks.alerts.*": Queue.HOUSEKEEPING,
    "tasks.reports.*": Queue.HOUSEKEEPING,
    "tasks.dashboard.*": Queue.HOUSEKEEPING,
}


def celery_task_routes() -> dict[str, dict[str, str]]:
    """TASK_ROUTES as Celery's `task_routes` setting wants it."""
    return {pattern: {"queue": queue.value} for pattern, queue in TASK_ROUTES.items()}
