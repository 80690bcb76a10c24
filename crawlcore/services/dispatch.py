"""The dispatcher and the reconciler: the database decides what work exists; the broker only carries it.

A message can be lost (a Redis restart without persistence) or delivered twice (a worker killed after
it started). Both are harmless: a server is re-dispatched when its last dispatch is older than
CRAWL_REDISPATCH_AFTER and nobody holds its lease, and a duplicate finds the lease taken or nothing due.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.utils import timezone

from crawlcore.models import Page, Server, ServerLease, Url
from crawlcore.queues import Queue
from crawler.lifecycle import State

from .checks import checks_interrupt_stale
from .queue import enqueue_extract_on_commit, enqueue_load_on_commit, queue_backlog
from .schedule import not_paused, server_release_paused, servers_in_policy_order, servers_pause

log = logging.getLogger(__name__)


def _dispatchable(now: datetime):
    """Servers with due Init URLs, a free slot, and no recent dispatch still waiting to be picked up."""
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    due = Url.objects.filter(server=OuterRef("pk"), state=State.INIT.value, next_check_at__lte=now)
    held = (
        ServerLease.objects.filter(server=OuterRef("pk"), expires_at__gte=now)
        .exclude(owner="")
        .values("server")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        Server.objects.filter(enabled=True, excluded_reason="")
        .filter(not_paused(now))  # Hybrid-Sorting (seed 000): a paused server's Init URLs wait
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
        .filter(Exists(due))
        .annotate(held=Subquery(held))
        .filter(Q(held__isnull=True) | Q(held__lt=settings.CRAWL_SERVER_CONCURRENCY))
    )


def _dispatch(candidates, now: datetime) -> int:
    sent = 0
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    for server_id, crawler_num in servers_in_policy_order(candidates, now=now):
        # Guarded: when two dispatchers (beat and a crawl command) race, one of them sends.
        changed = (
            Server.objects.filter(id=server_id)
            .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
            .update(dispatched_at=now)
        )
        if changed:
            enqueue_load_on_commit(server_id=server_id, crawler_num=crawler_num)
            sent += 1
    return sent


def dispatch_due(*, now: datetime | None = None) -> int:
    """Send a load task for every server that has due Init URLs and no task on it, in the order of the
    scheduling policy (CRAWL_SCHEDULER, crawlcore.services.schedule). Returns how many."""
    now = now or timezone.now()
    servers_pause(now=now)
    sent = _dispatch(_dispatchable(now), now)
    if not sent and server_release_paused(now=now) is not None:  # a paused server rather than idle workers
        sent = _dispatch(_dispatchable(now), now)
    return sent


def servers_dispatch_with_due_work(*, server_ids: Iterable[int]) -> int:
    """The same, for a few servers just given new URLs (so the crawl need not wait for the next round)."""
    ids = list(server_ids)
    if not ids:
        return 0
    now = timezone.now()
    return _dispatch(_dispatchable(now).filter(id__in=ids), now)


@dataclass
class ReconcileOutcome:
    url_leases: int = 0
    server_leases: int = 0
    extracts: int = 0
    checks: int = 0  # status checks whose request was interrupted (crawlcore.services.checks)


def reconcile(*, now: datetime | None = None) -> ReconcileOutcome:
    """Free leases whose owner died, re-send extraction of pages whose message was lost, and finish the
    status checks of requests whose worker died before recording them."""
    now = now or timezone.now()
    out = ReconcileOutcome()
    out.checks = checks_interrupt_stale(now=now)
    out.url_leases = (
        Url.objects.exclude(lease_owner="")
        .filter(lease_expires_at__lt=now)
        .update(lease_owner="", lease_expires_at=None)
    )
    out.server_leases = (
        ServerLease.objects.exclude(owner="").filter(expires_at__lt=now).update(owner="", expires_at=None)
    )
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    # While extract messages are still queued, an old undone page is most likely behind them, not lost:
    # sending it again would only make the backlog longer. Lost ones are found once the queue has drained.
    lost = []
    if not queue_backlog(Queue.EXTRACT.value):
        lost = list(
            Page.objects.filter(extracted_at__isnull=True)
            .filter(Q(extract_dispatched_at__isnull=True) | Q(extract_dispatched_at__lt=stale))
            .values_list("id", flat=True)[:5000]
        )
    for i in range(0, len(lost), 20):
        group = lost[i : i + 20]
        Page.objects.filter(id__in=group).update(extract_dispatched_at=now)
        enqueue_extract_on_commit(page_ids=group)
    out.extracts = len(lost)
    if out.url_leases or out.server_leases or out.extracts or out.checks:
        log.warning("reconciled: %s", out)
    return out


def leases_release_owner(*, owner: str) -> int:
    """Give back every URL and server slot `owner` (one worker thread) holds: its task failed half-way (the
    database went away) and will not finish them. Returns the URLs freed."""
    n = Url.objects.filter(lease_owner=owner).update(lease_owner="", lease_expires_at=None)
    ServerLease.objects.filter(owner=owner).update(owner="", expires_at=None)
    return n


def leases_release_all() -> int:
    """Embedded mode at start: this process is the only worker, so every lease is from a dead run."""
    n = Url.objects.exclude(lease_owner="").update(lease_owner="", lease_expires_at=None)
    ServerLease.objects.exclude(owner="").update(owner="", expires_at=None)
    Server.objects.update(dispatched_at=None)
    Page.objects.filter(extracted_at__isnull=True).update(extract_dispatched_at=None)
    return n
