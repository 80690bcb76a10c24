"""The monitor's dispatcher (beat): send the due servers to the `monitor` queue in batches.

The database decides what is due; the broker only carries ids. A lost message is re-sent once its
dispatch is older than CRAWL_REDISPATCH_AFTER; a duplicate finds its servers claimed and does nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from crawlcore.queues import Queue, pinned_queue

from ..models import ServerMonitor
from ..quorum import locations_parse

CHECK_TASK = "tasks.monitor.check_servers"
MAX_PER_RUN = 50_000  # bounds one dispatcher run; what is left is sent by the next one


def monitor_queue(crawler_num: int | None) -> str:
    """Servers pinned to a crawler number are checked only by workers started with that CRAWLER_NUM
    (they consume `monitor.c<n>` besides `monitor`). The embedded worker is every crawler at once, so
    there a pinned server's checks go to the plain queue."""
    return pinned_queue(Queue.MONITOR, None if settings.CELERY_EMBEDDED else crawler_num)


def enqueue_checks_on_commit(*, server_ids: Sequence[int], crawler_num: int | None) -> None:
    ids = list(server_ids)
    if ids:
        queue = monitor_queue(crawler_num)
        transaction.on_commit(lambda: current_app.send_task(CHECK_TASK, args=[ids], queue=queue))


def monitors_dispatch_due(*, now: datetime | None = None) -> int:
    """Send every due, not recently dispatched monitor to a worker. Returns how many servers were sent."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    due = (
        ServerMonitor.objects.filter(enabled=True, server__enabled=True)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lte=now))
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
    )
    candidates = list(
        due.order_by("next_check_at", "server_id").values_list("server_id", "server__crawler_num", "locations")[
            :MAX_PER_RUN
        ]
    )
    if not candidates:
        return 0
    sent = 0
    size = settings.MONITOR_BATCH_SIZE
    with transaction.atomic():
        ids = [sid for sid, _, _ in candidates]
        mine: set[int] = set()
        for i in range(0, len(ids), 1000):
            chunk = ServerMonitor.objects.filter(server_id__in=ids[i : i + 1000])
            # Guarded: of two dispatchers racing, only one marks (and so sends) a given server.
            chunk.filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale)).update(dispatched_at=now)
            mine.update(chunk.filter(dispatched_at=now).values_list("server_id", flat=True))
        by_pin: dict[int | None, list[int]] = defaultdict(list)
        for sid, pin, locations in candidates:
            if sid in mine:
                # A multi-location monitor goes to every listed crawler number; each claims its own turn.
                for num in locations_parse(locations) or (pin,):
                    by_pin[num].append(sid)
        for pin, group in by_pin.items():
            for i in range(0, len(group), size):
                enqueue_checks_on_commit(server_ids=group[i : i + size], crawler_num=pin)
                sent += len(group[i : i + size])
    return sent


def monitors_make_due(*, server_ids: Sequence[int], now: datetime | None = None) -> int:
    """Bring these servers' next check forward to now ("check now" through the workers)."""
    now = now or timezone.now()
    return ServerMonitor.objects.filter(server_id__in=list(server_ids)).update(next_check_at=now, dispatched_at=None)
