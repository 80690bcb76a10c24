"""The dispatcher and the reconciler: the database decides what work exists; the broker only carries it.

A message can be lost (a Redis restart without persistence) or delivered twice (a worker killed after
it started). Both are harmless: a server is re-dispatched when its last dispatch is older than
CRAWL_REDISPATCH_AFTER and nobody holds its lease, and a duplicate finds the lease taken or nothing due.

Servers are pulled by capacity (seed 000's robots and wait queue). There are CRAWL_LOAD_SLOTS robots
(load slots, cluster-wide). A slot is busy while a load batch holds Init URLs of a server; a server is
queued from its dispatch until a worker claims it (claiming clears `dispatched_at`). Each round sends
at most `slots − busy + CRAWL_LOAD_PREFETCH − queued` servers, the next ones of the current hour's column:
the broker never holds more than the free slots plus a small prefetch, so the column's order is the order
the robots take servers, not only while a backlog lasts.

The wait queue is reset at each hour boundary (paper step 4): a dispatcher message carries the hour it
was sent in, and a load worker drops a message from an earlier hour (`load_dispatch_current`); the first
round of the new hour forgets the old hour's dispatches, so the queue is refilled from the new column. A
robot's own continuation on its server (the load agent's next batch, `continuation=True`) carries no
hour: an unfinished server keeps its robot across the boundary unless the pause rule stops it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.utils import timezone

from crawlcore.db.raw import fetch_rows, one_of, typed
from crawlcore.models import Page, Server, ServerLease, Url
from crawlcore.queues import Queue
from crawlcore.selectors_health import not_held
from crawler.lifecycle import Agent, State

from .queue import enqueue_extract_on_commit, enqueue_load_on_commit, queue_backlog
from .render import pages_render_redispatch
from .request_records import checks_interrupt_stale
from .schedule import hour_start, not_paused, server_release_paused, servers_in_policy_order, servers_pause

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
        .filter(not_held(now))  # its health: an operator's pause, a back-off, down with no probe due
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
        .filter(Exists(due))
        .annotate(held=Subquery(held))
        .filter(Q(held__isnull=True) | Q(held__lt=settings.CRAWL_SERVER_CONCURRENCY))
    )


def _all_slots_held(ids: list[int], now: datetime) -> set[int]:
    """Those of the servers `ids` whose CRAWL_SERVER_CONCURRENCY slots are all held now: no dispatch can give
    them another visit (_dispatchable's `held` condition)."""
    among, param = one_of("server_id", ids, "bigint")
    sql = (
        f"SELECT server_id FROM {ServerLease._meta.db_table} WHERE {among} AND owner <> ''"
        f" AND expires_at >= {typed('timestamptz')} GROUP BY server_id HAVING count(*) >= {typed('integer')}"
    )
    rows = fetch_rows(sql, [param, now, settings.CRAWL_SERVER_CONCURRENCY], prepare=True)
    return {server_id for (server_id,) in rows}


def server_goes_on(*, server_id: int, now: datetime | None = None) -> bool:
    """Whether a load visit may take another batch of its server (LoadBatch.another_round): the server is
    still enabled, not excluded, not paused and not held — the conditions a continuation message is sent under, but
    the slot (this visit holds it) and the dispatch mark (the visit's own claim cleared it)."""
    now = now or timezone.now()
    servers = Server.objects.filter(id=server_id, enabled=True, excluded_reason="")
    return servers.filter(not_paused(now)).filter(not_held(now)).exists()


def hour_key(now: datetime) -> int:
    """The hour a dispatch belongs to: the start of its hour of day (settings.TIME_ZONE, the hours of the
    priority table's columns) in hours since the epoch, so every machine reads the same number."""
    return int(hour_start(now).timestamp() // 3600)


def _hour_floor(now: datetime) -> datetime:
    return hour_start(now)


@dataclass(frozen=True)
class LoadCapacity:
    slots: int  # CRAWL_LOAD_SLOTS: the robots
    busy: int  # servers a load batch is working on now
    queued: int  # servers dispatched this hour and not yet claimed: their message waits in the broker

    @property
    def free(self) -> int:
        """Slots with nothing to do and nothing queued for them."""
        return max(0, self.slots - self.busy - self.queued)

    @property
    def room(self) -> int:
        """How many more servers may be queued now: the free slots plus the prefetch."""
        return max(0, self.slots - self.busy + settings.CRAWL_LOAD_PREFETCH - self.queued)


def load_capacity(*, now: datetime) -> LoadCapacity:
    """The load slots, and how many are busy or have a server queued for them."""
    # The load agent's visits hold their server's slot for the whole batch, marked with the agent: a count
    # over the small lease table. (Counting servers with leased Init URLs read every Init URL of the crawl,
    # the lease columns having no index on purpose: 5 s at 10 million URLs, on every dispatch.)
    since = max(now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER), _hour_floor(now))
    # Two counts in one fixed-shape statement (prepared on PostgreSQL): no query to build, each round.
    sql = (
        f"SELECT (SELECT count(DISTINCT server_id) FROM {ServerLease._meta.db_table} WHERE agent = %s"
        f" AND owner <> '' AND expires_at >= {typed('timestamptz')}),"
        f" (SELECT count(*) FROM {Server._meta.db_table} WHERE dispatched_at >= {typed('timestamptz')})"
    )
    ((busy, queued),) = fetch_rows(sql, [Agent.LOAD.value, now, since], prepare=True)
    return LoadCapacity(slots=settings.CRAWL_LOAD_SLOTS, busy=busy, queued=queued)


def queue_reset_at_hour_boundary(*, now: datetime) -> int:
    """The paper's "at the next hour, first empty the wait queue": forget dispatches of an earlier hour
    that no worker has claimed, so the servers are sent again in the new column's order. Their messages
    are dropped when a worker receives them (`load_dispatch_current`). Guarded and idempotent."""
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    return Server.objects.filter(dispatched_at__gte=stale, dispatched_at__lt=_hour_floor(now)).update(
        dispatched_at=None
    )


def load_dispatch_current(*, server_id: int, hour: int | None, now: datetime | None = None) -> bool:
    """A load worker's first step: False when its message was sent in an earlier hour than now (the wait
    queue was reset at the boundary; the server is sent again in this hour's order). `hour` None: a
    robot's continuation on its own server, always current."""
    now = now or timezone.now()
    if hour is None or hour >= hour_key(now):
        return True
    # Normally the dispatcher's first round of the hour did this already; if it has not run yet, the
    # server must not stay "queued" by a message we are throwing away.
    Server.objects.filter(id=server_id, dispatched_at__lt=_hour_floor(now)).update(dispatched_at=None)
    log.info("load message for server %s from an earlier hour dropped (wait queue reset)", server_id)
    return False


def _dispatch(candidates, now: datetime, *, limit: int | None = None, stamped: bool = True) -> int:
    """Send the candidates in policy order, at most `limit`; `stamped`: the messages carry this hour."""
    stamp = hour_key(now) if stamped else None
    sent = 0
    stale = now - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER)
    for server_id, crawler_num in servers_in_policy_order(candidates, now=now):
        if limit is not None and sent >= limit:
            break
        # Guarded: when two dispatchers (beat and a crawl command) race, one of them sends.
        changed = (
            Server.objects.filter(id=server_id)
            .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
            .update(dispatched_at=now)
        )
        if changed:
            enqueue_load_on_commit(server_id=server_id, crawler_num=crawler_num, hour=stamp)
            sent += 1
    return sent


def dispatch_due(*, now: datetime | None = None) -> int:
    """Fill the free load slots (plus the prefetch) with the next servers that have due Init URLs, in the
    order of the scheduling policy's column for this hour (CRAWL_SCHEDULER, crawlcore.services.schedule).
    When nothing else is waiting and slots are free, paused servers are released one by one rather than
    leave robots idle. Returns how many servers were sent."""
    now = now or timezone.now()
    queue_reset_at_hour_boundary(now=now)
    servers_pause(now=now)
    capacity = load_capacity(now=now)
    sent = _dispatch(_dispatchable(now), now, limit=capacity.room)
    free = capacity.free - sent
    while free > 0 and not _dispatchable(now).exists():
        if server_release_paused(now=now) is None:
            break
        released = _dispatch(_dispatchable(now), now, limit=free)
        sent, free = sent + released, free - max(released, 1)
    return sent


def servers_dispatch_with_due_work(*, server_ids: Iterable[int], continuation: bool = False) -> int:
    """The same, for a few servers just given new URLs (so the crawl need not wait for the next round),
    within the room the load slots leave. `continuation`: the load agent going on with the server it just
    worked on — its robot keeps it (the paper's robot stays on a server until done or paused), so neither
    the room nor the hour applies: the message carries no hour and survives the boundary."""
    ids = list(server_ids)
    if not ids:
        return 0
    now = timezone.now()
    if continuation:
        return _dispatch(_dispatchable(now).filter(id__in=ids), now, stamped=False)
    # Mostly, while a crawl runs, there is no room for another server, or every one of these is being loaded
    # with all its slots held: two small fixed-shape statements say so, before the dispatchable query (whose
    # building alone was a large share of the CPU of the extract agent, which asks after every batch).
    room = load_capacity(now=now).room
    if not room:
        return 0
    held = _all_slots_held(ids, now)
    ids = [i for i in ids if i not in held]
    if not ids:
        return 0
    return _dispatch(_dispatchable(now).filter(id__in=ids), now, limit=room)


@dataclass
class ReconcileOutcome:
    url_leases: int = 0
    server_leases: int = 0
    extracts: int = 0
    checks: int = 0  # status checks whose request was interrupted (crawlcore.services.request_records)
    renders: int = 0  # pages whose render message was lost (crawlcore.services.render)


def reconcile(*, now: datetime | None = None) -> ReconcileOutcome:
    """Free leases whose owner died, re-send extraction and rendering of pages whose message was lost, and finish the
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
    out.renders = pages_render_redispatch(stale=stale, now=now)
    if out.url_leases or out.server_leases or out.extracts or out.checks or out.renders:
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
    Page.objects.filter(rendered_at__isnull=True).exclude(render_reason="").update(render_dispatched_at=None)
    return n
