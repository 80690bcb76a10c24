"""Seed 000 in the dispatcher: the order servers are sent in each hour, and the Hybrid-Sorting pause.

The policy (CRAWL_SCHEDULER: random, sorting or hybrid) is scheduling.hybrid_sorting', built from the 24-hour
load profiles the monitoring app keeps (mean response time per hour of day). The dispatcher calls:

* `servers_pause_at_hour_boundary` — paper step 5. A server fetched by the load agent in the hour that
  just ended and still holding due Init URLs is "unfinished". If one of the next CRAWL_PAUSE_LOOKAHEAD
  hours is less loaded for it (by CRAWL_PAUSE_MARGIN), it is paused until that hour: `paused_until` is
  set and its due Init URLs are moved to that time, which also ends the load agent's own chain of
  batches on it. Its remaining Init URLs are the checkpoint; it resumes from them. Otherwise
  `paused_until` is set to the start of this hour: "decided, go on", so the decision is made once per
  server and hour, however often (and by however many dispatchers) this runs.
* `not_paused` — the filter that keeps paused servers out of dispatch.
* `servers_hold_paused` — Init URLs discovered on a paused server while it waits wait too.
* `server_release_paused` — a paused server stands behind all others, not still: when nothing else is
  waiting to be sent, the dispatcher releases the first paused server in policy order rather than let
  the workers idle (the simulator shows why: a strict pause with idle robots ends later than no pause).
* `servers_in_policy_order` — the dispatchable servers in the policy's order for this hour: the
  order their load messages enter the queue, so the order the workers take them.

Every step is idempotent: two dispatchers (two beats, or beat and the crawl command) racing here do
the same thing twice or one of them finds the guarded UPDATE already done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from crawlcore.models import Server, StatusCheck, Url
from crawlcore.selectors import load_profiles
from crawler.lifecycle import Agent, State
from crawler.urlnorm import ALLOWED_SCHEMES
from scheduling.hybrid_sorting import HOURS, ServerOrder, best_hour, policy_build, profile_normalized


def hour_start(now: datetime) -> datetime:
    """The start of `now`'s hour of day (settings.TIME_ZONE, the hours the load profiles are kept in)."""
    return timezone.localtime(now).replace(minute=0, second=0, microsecond=0)


def policy_for(server_ids: list[int], *, name: str | None = None) -> ServerOrder[int]:
    """The active policy (or `name`) over these servers' load profiles; the server list is by id, equal
    loads go by server name (the origin)."""
    listing = sorted(server_ids)
    return policy_build(
        name or settings.CRAWL_SCHEDULER,
        load_profiles(server_ids=listing),
        listing,
        names=server_names(listing),
        pause_lookahead=settings.CRAWL_PAUSE_LOOKAHEAD,
        pause_margin=settings.CRAWL_PAUSE_MARGIN,
    )


def server_names(server_ids: list[int]) -> dict[int, str]:
    """Each server's name as the schedulers and `schedule_table` show it: its origin."""
    rows = Server.objects.filter(id__in=server_ids).values_list("id", "scheme", "host", "port")
    return {sid: Server(scheme=scheme, host=host, port=port).origin for sid, scheme, host, port in rows}


def not_paused(now: datetime) -> Q:
    return Q(paused_until__isnull=True) | Q(paused_until__lte=now)


def _due_init(now: datetime):
    return Url.objects.filter(server=OuterRef("pk"), state=State.INIT.value, next_check_at__lte=now)


def servers_pause_at_hour_boundary(*, now: datetime) -> list[int]:
    """Decide, once per hour, whether each unfinished server goes on or pauses. Returns the paused ids."""
    if settings.CRAWL_SCHEDULER != "hybrid" or settings.CRAWL_PAUSE_LOOKAHEAD <= 0:
        return []
    start = hour_start(now)
    undecided = Q(paused_until__isnull=True) | Q(paused_until__lt=start)
    crawled = StatusCheck.objects.filter(
        server=OuterRef("pk"), agent=Agent.LOAD.value, checked_at__gte=start - timedelta(hours=1), checked_at__lt=start
    )
    ids = list(
        Server.objects.filter(enabled=True, excluded_reason="")
        .filter(undecided)
        .filter(Exists(_due_init(now)), Exists(crawled))
        .values_list("id", flat=True)
    )
    if not ids:
        return []
    policy = policy_for(ids)
    hour = timezone.localtime(now).hour
    paused = []
    for server_id in ids:
        wait = policy.pause(server_id, hour)
        until = start + timedelta(hours=wait)
        with transaction.atomic():
            # Guarded: a second dispatcher deciding the same server at the same time changes nothing.
            if not Server.objects.filter(id=server_id).filter(undecided).update(paused_until=until):
                continue
            if wait:
                _urls_wait(server_id, now=now, until=until)
                paused.append(server_id)
    return paused


def _urls_wait(server_id: int, *, now: datetime, until: datetime) -> int:
    """Move the server's due Init URLs (leased ones too: a batch running now hands them back unchanged)."""
    return Url.objects.filter(server_id=server_id, state=State.INIT.value, next_check_at__lte=now).update(
        next_check_at=until
    )


def servers_hold_paused(*, now: datetime) -> int:
    """URLs that came due on a paused server (new links found elsewhere) wait with the others."""
    held = 0
    rows = Server.objects.filter(paused_until__gt=now).filter(Exists(_due_init(now)))
    for server_id, until in rows.values_list("id", "paused_until"):
        held += _urls_wait(server_id, now=now, until=until)
    return held


def servers_pause(*, now: datetime) -> list[int]:
    """The dispatcher's scheduling step before it sends: the hour-boundary pauses, then the hold."""
    paused = servers_pause_at_hour_boundary(now=now)
    servers_hold_paused(now=now)
    return paused


def server_release_paused(*, now: datetime) -> int | None:
    """Release the first paused server in policy order: its URLs come due now. Its id, or None. The
    dispatcher calls it only when a load slot is free and no other server is waiting to be sent."""
    paused = dict(
        Server.objects.filter(paused_until__gt=now, enabled=True, excluded_reason="").values_list("id", "paused_until")
    )
    if not paused:
        return None
    hour = timezone.localtime(now).hour
    for server_id in policy_for(list(paused)).order(hour, list(paused)):
        until = paused[server_id]
        # paused_until = now: not paused, and decided for this hour (the boundary pass leaves it alone).
        if Server.objects.filter(id=server_id, paused_until=until).update(paused_until=now):
            Url.objects.filter(server_id=server_id, state=State.INIT.value, next_check_at=until).update(
                next_check_at=now
            )
            return server_id
    return None


def servers_in_policy_order(candidates: QuerySet, *, now: datetime) -> list[tuple[int, int | None]]:
    """(id, crawler_num) of the candidate servers, in the active policy's order for this hour."""
    rows = dict(candidates.values_list("id", "crawler_num"))
    if len(rows) < 2:
        return list(rows.items())  # one server (a load batch's own continuation, mostly): no order to compute
    order = policy_for(list(rows)).order(timezone.localtime(now).hour, sorted(rows))
    return [(server_id, rows[server_id]) for server_id in order]


# --------------------------------------------------------------------------------------------------
# What operators see (a selector: reads only)


@dataclass
class ScheduleTable:
    """The active policy's 24-column table. `columns[h]`: server ids in dispatch order for hour h."""

    policy: str
    hour: int
    pause_lookahead: int
    pause_margin: float
    columns: list[list[int]]
    unprofiled: list[int]  # servers with no load profile yet: after the others, by id
    servers: dict[int, dict] = field(default_factory=dict)  # id -> origin, best_hour, profile_ms, paused_until

    def as_json(self) -> dict:
        return {
            "policy": self.policy,
            "hour": self.hour,
            "pause_lookahead": self.pause_lookahead,
            "pause_margin": self.pause_margin,
            "columns": {str(h): col for h, col in enumerate(self.columns)},
            "unprofiled": self.unprofiled,
            "servers": {str(k): v for k, v in self.servers.items()},
        }


def schedule_table(*, now: datetime | None = None, policy: str | None = None) -> ScheduleTable:
    """The table the dispatcher follows now, over the enabled servers, with each server's profile and pause."""
    now = now or timezone.now()
    # Only web servers are crawled: a TCP, DNS or heartbeat monitor's row is not something to schedule.
    servers = Server.objects.filter(enabled=True, excluded_reason="", scheme__in=ALLOWED_SCHEMES).order_by("id")
    rows = {s.id: s for s in servers.only("id", "scheme", "host", "port", "paused_until")}
    order = policy_for(list(rows), name=policy)
    profiles = {sid: profile_normalized(p) for sid, p in load_profiles(server_ids=list(rows)).items()}
    info = {}
    for sid, server in rows.items():
        profile = profiles.get(sid)
        paused = server.paused_until if server.paused_until and server.paused_until > now else None
        info[sid] = {
            "origin": server.origin,
            # A flat profile (one hour measured so far, say) has no best hour to show.
            "best_hour": best_hour(profile) if profile and max(profile) > min(profile) else None,
            "profile_ms": [round(v, 1) for v in profile] if profile else None,
            "paused_until": paused.isoformat() if paused else None,
        }
    columns = order.table() if rows else [[] for _ in range(HOURS)]
    listed = set(columns[0]) if columns else set()
    return ScheduleTable(
        policy=order.name,
        hour=timezone.localtime(now).hour,
        pause_lookahead=settings.CRAWL_PAUSE_LOOKAHEAD if order.name == "hybrid" else 0,
        pause_margin=settings.CRAWL_PAUSE_MARGIN,
        columns=columns,
        unprofiled=[sid for sid in rows if sid not in listed],
        servers=info,
    )


def schedule_columns(*, policy: str | None = None) -> list[list[str]]:
    """The contract of `schedule_table --json`: for each hour 0-23, every enabled server's name (its origin)
    in dispatch order — the policy's column, then the servers without a load profile by id."""
    ids = list(Server.objects.filter(enabled=True, excluded_reason="").order_by("id").values_list("id", flat=True))
    order, names = policy_for(ids, name=policy), server_names(ids)
    return [[names.get(sid, str(sid)) for sid in order.order(h, ids)] for h in range(HOURS)]
