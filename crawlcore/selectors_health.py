"""Reads of a server's health: `{state, reason, source, since, until}` for one server or many, the
condition the dispatcher and the sweeps leave held servers out with, counts per state and the history.

Every reader asks here (the jobs' "why is it not moving", the server page, the grid, the API, /metrics,
`job show`): the rules are crawler.hosthealth's, the record crawlcore.models.ServerHealth, which only
crawlcore.services.health writes. A hold that lapsed since the last write reads as lapsed: the summary is
derived afresh from the record's parts at every read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from crawler.hosthealth import HealthState, Parts, Summary, summary

from .models import Server, ServerHealth, ServerHealthEvent

# What the summary needs of the Server row.
SERVER_FIELDS = ("id", "enabled", "excluded_reason", "paused_until", "crawl_delay", "min_delay")


def parts_of(server: Server, row: ServerHealth | None) -> Parts:
    """The plain values of a server's record and of its own columns, for crawler.hosthealth.summary."""
    own = dict(
        enabled=server.enabled,
        excluded_reason=server.excluded_reason,
        schedule_until=server.paused_until,
        base_delay=server.request_delay(),
    )
    if row is None:
        return Parts(**own)
    return Parts(
        paused_at=row.paused_at, paused_until=row.paused_until, paused_by=row.paused_by, pause_note=row.pause_note,
        down_since=row.down_since, down_reason=row.down_reason,
        robots_since=row.robots_since, robots_reason=row.robots_reason, probe_at=row.probe_at,
        limited_at=row.limited_at, limited_until=row.limited_until, limited_reason=row.limited_reason,
        paced_since=row.paced_since, pace_delay=row.pace_delay, p95_ms=row.p95_ms, error_share=row.error_share,
        healthy_since=row.since if row.state == HealthState.HEALTHY else row.updated_at,
        **own,
    )  # fmt: skip


def health_summary(*, server: Server, row: ServerHealth | None = None, now: datetime | None = None) -> Summary:
    """The server's health now (`row`: its record, when the caller has it; read otherwise)."""
    if row is None:
        row = ServerHealth.objects.filter(server_id=server.id).first()
    return summary(parts_of(server, row), now or timezone.now())


def server_health_summary(*, server_id: int, now: datetime | None = None) -> Summary | None:
    """The Summary of one server, read by id (None: no such server)."""
    server = Server.objects.only(*SERVER_FIELDS).filter(id=server_id).first()
    return None if server is None else health_summary(server=server, now=now)


def server_health(*, server: Server | int, now: datetime | None = None) -> dict:
    """`{state, reason, source, since, until}` of one server (what the API's `health` shows)."""
    if not isinstance(server, Server):
        server = Server.objects.only(*SERVER_FIELDS).get(id=server)
    return health_summary(server=server, now=now).as_dict()


def servers_health_summaries(*, server_ids: Iterable[int], now: datetime | None = None) -> dict[int, Summary]:
    """The Summary of each of these servers, in two queries."""
    now = now or timezone.now()
    ids = list(server_ids)
    servers = Server.objects.only(*SERVER_FIELDS).in_bulk(ids)
    rows = ServerHealth.objects.in_bulk(list(servers))
    return {sid: summary(parts_of(s, rows.get(sid)), now) for sid, s in servers.items()}


def servers_health(*, server_ids: Iterable[int], now: datetime | None = None) -> dict[int, dict]:
    """`{state, reason, source, since, until}` of each of these servers."""
    return {sid: s.as_dict() for sid, s in servers_health_summaries(server_ids=server_ids, now=now).items()}


def held_rows(now: datetime, *, beyond: float = 0.0) -> Q:
    """ServerHealth rows whose server may be sent no crawl request now (and none within `beyond` seconds): an
    operator's pause, a back-off asked for, a hold (down, robots.txt) whose next probe is not due yet."""
    t = now + timedelta(seconds=beyond)
    paused = Q(paused_at__isnull=False) & (Q(paused_until__isnull=True) | Q(paused_until__gt=now))
    probing = (Q(down_since__isnull=False) | Q(robots_since__isnull=False)) & Q(probe_at__gt=t)
    return paused | probing | Q(limited_until__gt=t)


def not_held(now: datetime, *, beyond: float = 0.0) -> Q:
    """The condition on Server rows the dispatcher and the sweeps leave held servers out with."""
    return ~Exists(ServerHealth.objects.filter(server=OuterRef("pk")).filter(held_rows(now, beyond=beyond)))


def held_server_ids(*, now: datetime | None = None, beyond: float = 0.0) -> list[int]:
    """Servers held now and for at least `beyond` seconds more (a crawl does not wait for them)."""
    now = now or timezone.now()
    return list(ServerHealth.objects.filter(held_rows(now, beyond=beyond)).values_list("server_id", flat=True))


def health_counts(*, now: datetime | None = None) -> dict[str, int]:
    """Servers per health state (every state present; a server with no record is healthy)."""
    now = now or timezone.now()
    counts = Counter({s.value: 0 for s in HealthState})
    # Only a server with a record, or one disabled, excluded or paused by the schedule, can be anything but
    # healthy: the others are counted, not read.
    special = (
        Q(health__isnull=False) | Q(enabled=False) | ~Q(excluded_reason="") | Q(paused_until__gt=now)
    )
    rows = ServerHealth.objects.in_bulk()
    seen = 0
    for server in Server.objects.filter(special).only(*SERVER_FIELDS).iterator(chunk_size=2000):
        counts[summary(parts_of(server, rows.get(server.id)), now).state.value] += 1
        seen += 1
    counts[HealthState.HEALTHY.value] += Server.objects.count() - seen
    return dict(counts)


def server_health_history(*, server_id: int, limit: int = 20) -> list[dict]:
    """The server's last changes of health, newest first: {at, state, source, reason, until} (datetimes)."""
    events = ServerHealthEvent.objects.filter(server_id=server_id).order_by("-at", "-id")[:limit]
    return [{"at": e.at, "state": e.state, "source": e.source, "reason": e.reason, "until": e.until} for e in events]
