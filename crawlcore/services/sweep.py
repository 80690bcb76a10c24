"""The scans' sweeps: choose the URLs to re-check now, reserve them, and send them to the scan workers,
one message per server. Beat runs them (`tasks.scan.sweep_*`); the crawl command calls them too.

The choice is one small function per agent; the active scan's is seed 004's staleness-optimal choice
(crawlcore.services.recrawl_choice).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from crawlcore.models import FreshnessObjective, Url
from crawlcore.selectors_freshness import servers_lastmod_untrusted
from crawlcore.selectors_health import held_server_ids
from crawler.lifecycle import Agent, State

from .freshness_choice import budget_left, freshness_first, spent, within_budget
from .queue import enqueue_scan_on_commit
from .recrawl_choice import active_scan_room, staleness_top
from .scan import SCAN_STATES, sweep_owner_prefix
from .urls import urls_lease


def _scannable(now: datetime):
    """Not set aside, not leased (or its lease expired), on a server that is crawled and not held (its health:
    paused, backing off, down with no probe due)."""
    rows = Url.objects.filter(exclusion_reason="", server__enabled=True, server__excluded_reason="").filter(
        Q(lease_owner="") | Q(lease_expires_at__lt=now)
    )
    held = held_server_ids(now=now)
    return rows.exclude(server_id__in=held) if held else rows


def active_due(*, now: datetime) -> bool:
    """Whether any Visited URL may be due for the active scan: last checked CRAWL_REVISIT_AFTER ago or more,
    or changed by its sitemap since (both through partial indexes: cheap however many URLs there are; a
    first crawl has none). False means active_candidates would find nothing."""
    checked_before = now - timedelta(seconds=settings.CRAWL_REVISIT_AFTER)
    visited = Url.objects.filter(state=State.VISITED.value)
    return (
        visited.filter(last_checked_at__lte=checked_before).exists()
        or visited.filter(
            Q(sitemap_lastmod__isnull=False, sitemap_lastmod__gt=F("last_checked_at"))
            | Q(pushed_at__isnull=False, pushed_at__gt=F("last_checked_at"))  # an IndexNow push: a partial index too
        ).exists()
        or FreshnessObjective.objects.exists()  # an objective's pages come due by its target, before the floor
    )


def active_candidates(*, now: datetime, limit: int) -> list[int]:
    """Visited URLs to re-check now, at most `limit`, best first: the pages freshness objectives need checked
    to hold their targets (crawlcore.services.freshness_choice), then pages whose sitemap lastmod says they
    changed (on servers whose lastmod has proved honest), then those last checked at least CRAWL_REVISIT_AFTER
    ago (a floor), the best by seed 004's staleness score (crawlcore.services.recrawl_choice;
    CRAWL_RECRAWL_POLICY picks a comparison policy). A server an objective covers takes no more requests a day
    than its budget. A URL whose server asked for patience carries a next_check_at and waits for it."""
    checked_before = now - timedelta(seconds=settings.CRAWL_REVISIT_AFTER)
    visited = (
        _scannable(now)
        .filter(state=State.VISITED.value)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lte=now))
    )
    left = budget_left(now=now)
    first = freshness_first(now=now, scannable=visited, limit=limit, left=left)
    visited = visited.exclude(server_id__in=spent(left)).exclude(id__in=first)
    # A sitemap lastmod newer than the last check is the server saying the page changed: due now,
    # before any staleness guess, if the server's lastmod has proved honest. The check moves last_checked_at
    # past it, so it is due once per change.
    # An IndexNow push (crawlcore.services.indexnow) says the same with the site's key: due alike.
    said = Q(sitemap_lastmod__gt=F("last_checked_at")) & ~Q(server_id__in=servers_lastmod_untrusted())
    changed = list(
        visited.filter(said | Q(pushed_at__gt=F("last_checked_at")))
        .order_by(F("pushed_at").asc(nulls_last=True), F("sitemap_lastmod").asc(nulls_last=True), "id")
        .values_list("id", flat=True)[: limit - len(first)]
    )
    changed = within_budget(changed, left=left)
    rows = visited.filter(last_checked_at__lte=checked_before).exclude(id__in=changed)
    room = limit - len(first) - len(changed)
    rest = staleness_top(rows, now=now, limit=room, policy=settings.CRAWL_RECRAWL_POLICY)
    return first + changed + within_budget(rest, left=left)


def inactive_candidates(*, now: datetime, limit: int) -> list[int]:
    """NoResponse1/2 URLs whose back-off is over, the longest overdue first."""
    states = [s.value for s in SCAN_STATES[Agent.INACTIVE_SCAN]]
    rows = _scannable(now).filter(state__in=states, next_check_at__lte=now).order_by("next_check_at", "id")
    return list(rows.values_list("id", flat=True)[:limit])


def scan_sweep(*, agent: Agent, now: datetime | None = None, room: int | None = None) -> int:
    """Reserve the URLs due for `agent` and send one scan message per server. Returns the URLs sent.

    `room`: how many the active scan may take now; default the measured m less what is still out
    (`active_scan_room`). The live benchmark passes the same fixed m to every policy it compares.
    """
    now = now or timezone.now()
    if agent == Agent.ACTIVE_SCAN:
        if room is None and not active_due(now=now):
            return 0  # the room's counts and the choice read every Visited URL and the checks: not for nothing
        ids = active_candidates(now=now, limit=active_scan_room(now=now) if room is None else room)
    else:
        ids = inactive_candidates(now=now, limit=settings.CRAWL_INACTIVE_SCAN_CAPACITY)
    return scan_send(agent=agent, ids=ids, now=now)


def scan_send(*, agent: Agent, ids: list[int], now: datetime) -> int:
    """Reserve `ids` for `agent` and send one scan message per server; the URLs sent (those still in the
    agent's states and free).

    The reservation is a lease under a sweep owner, so the next sweep does not send them again while
    the message waits in the queue; if it is lost, the lease expires and a later sweep sends them.
    """
    if not ids:
        return 0
    owner = f"{sweep_owner_prefix(agent)}{uuid.uuid4().hex[:12]}"
    with transaction.atomic():  # the messages go out after commit, when the leases are visible
        urls_lease(ids=ids, owner=owner, states=SCAN_STATES[agent], now=now)
        by_server: dict[tuple[int, int | None], list[int]] = defaultdict(list)
        rows = Url.objects.filter(lease_owner=owner).values_list("server_id", "server__crawler_num", "id")
        for server_id, crawler_num, url_id in rows.order_by("id"):
            by_server[(server_id, crawler_num)].append(url_id)
        for (server_id, crawler_num), url_ids in by_server.items():
            enqueue_scan_on_commit(queue=agent.value, server_id=server_id, url_ids=url_ids, crawler_num=crawler_num)
    return sum(len(v) for v in by_server.values())
