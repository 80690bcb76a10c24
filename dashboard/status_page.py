"""Reads for the public status page of a server group (dashboard.models.StatusPage): each server's state
now, its uptime per day over UPTIME_DAYS days, and its incidents from the status timeline.

Only what a server's users may see: the server's host name (its full origin only when the page says so),
statuses and times. No URLs, no check details, no reasons (they can carry response text), no groups or
crawler numbers. The page is rendered once per CACHE_TTL seconds per process (public.py), so a spike of
visitors costs one set of these reads a minute.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import models
from django.utils import timezone

from crawler.status import BAD, GOOD, Status
from monitoring.models import HourlyRollup, IncidentUpdate, MaintenanceWindow, StatusChange
from monitoring.models import Incident as IncidentRow

from .cache import cached
from .models import StatusPage
from .selectors_grid import grid_tiles

UPTIME_DAYS = 90
MAX_SERVERS = 200
MAX_INCIDENTS = 30
CACHE_TTL = 60.0

# What a visitor reads for each status the grid shows.
PUBLIC_STATE = {
    Status.NORMAL.value: ("up", "Operational"),
    Status.DELAY.value: ("slow", "Slow"),
    Status.UNCONFIRMED.value: ("up", "Operational"),  # one failed check is not an outage yet
    Status.DISCONNECT.value: ("down", "Down: not answering"),
    Status.ERROR.value: ("down", "Down: answering with errors"),
    Status.MAINTENANCE.value: ("maintenance", "Maintenance"),
    Status.STALE.value: ("unknown", "Unknown: not checked recently"),
    Status.UNKNOWN.value: ("unknown", "Unknown: not checked yet"),
}


@dataclass
class PublicServer:
    id: int
    name: str
    href: str  # empty unless the page shows addresses
    state: str  # up, slow, down, maintenance, unknown: the CSS class
    text: str
    uptime: float | None = None  # over UPTIME_DAYS
    days: list[tuple[str, float | None]] = field(default_factory=list)  # (date, uptime %), oldest first


@dataclass
class Incident:
    name: str
    kind: str
    started: datetime
    ended: datetime | None


def status_pages() -> dict[str, dict]:
    """The enabled status pages by slug, kept CACHE_TTL seconds: an address that is no page is a 404
    without a query."""

    def compute() -> dict[str, dict]:
        rows = StatusPage.objects.filter(enabled=True).values("slug", "group", "title", "show_addresses")
        return {r["slug"]: r for r in rows}

    return cached("status_pages", CACHE_TTL, compute)


def status_page_data(*, page: dict, now: datetime | None = None) -> dict:
    """What the page shows: servers (worst first, as the grid orders them), incidents (newest first), the
    overall state, as of `now`."""
    now = now or timezone.now()
    _, tiles = grid_tiles(group=page["group"], limit=MAX_SERVERS, details=False)
    # A monitor an operator named (a heartbeat, a TCP port) is shown by its name, not its server row's address.
    servers = [
        PublicServer(
            id=t.id,
            name=t.name if t.named else (t.origin if page["show_addresses"] else _host(t.origin)),
            href=t.origin + "/" if page["show_addresses"] and t.origin.startswith("http") else "",
            state=PUBLIC_STATE[t.status][0],
            text=PUBLIC_STATE[t.status][1],
        )
        for t in tiles
        if t.status in PUBLIC_STATE
    ]
    names = {s.id: s.name for s in servers}
    _uptime_days(servers, now)
    states = {s.state for s in servers}
    overall = "down" if "down" in states else "slow" if "slow" in states else "up" if states else "unknown"
    return {
        "title": page["title"] or page["group"],
        "servers": servers,
        "incidents": _incidents(names, now),
        "reports": _incident_reports(names, now),
        "maintenance": _maintenance_ahead(names, now),
        "overall": overall,
        "as_of": now,
        "days": UPTIME_DAYS,
    }


def _host(origin: str) -> str:
    """The host name of an origin ("https://www.example.org:8443" -> "www.example.org"; IPv6 kept whole)."""
    rest = origin.split("://", 1)[-1]
    if rest.startswith("["):
        return rest.split("]", 1)[0] + "]"
    return rest.rsplit(":", 1)[0] if ":" in rest else rest


def _uptime_days(servers: list[PublicServer], now: datetime) -> None:
    """Each server's uptime per day (the operator's zone) from the hourly rollups, and over the range."""
    first = timezone.localtime(now).date() - timedelta(days=UPTIME_DAYS - 1)
    start = timezone.make_aware(datetime.combine(first, datetime.min.time()))
    counts: dict[tuple[int, date], list[int]] = defaultdict(lambda: [0, 0])  # [up, counted]
    rows = HourlyRollup.objects.filter(server_id__in=[s.id for s in servers], hour__gte=start).values_list(
        "server_id", "hour", "normal", "delay", "disconnect", "error"
    )
    for sid, hour, normal, delay, disconnect, error in rows.iterator(chunk_size=5000):
        c = counts[(sid, timezone.localtime(hour).date())]
        c[0] += normal + delay
        c[1] += normal + delay + disconnect + error
    days = [first + timedelta(days=i) for i in range(UPTIME_DAYS)]
    for s in servers:
        up = total = 0
        for d in days:
            c = counts.get((s.id, d))
            s.days.append((d.isoformat(), 100.0 * c[0] / c[1] if c and c[1] else None))
            if c:
                up, total = up + c[0], total + c[1]
        s.uptime = 100.0 * up / total if total else None


def _incidents(names: dict[int, str], now: datetime) -> list[Incident]:
    """Confirmed outages from the status timeline: from a change to a bad status to the change back to a
    good one (ongoing when there is none yet), newest first."""
    since = now - timedelta(days=UPTIME_DAYS)
    changes = (
        StatusChange.objects.filter(server_id__in=list(names), at__gte=since)
        .order_by("server_id", "at", "id")
        .values_list("server_id", "to_status", "at")
    )
    bad, good = {s.value for s in BAD}, {s.value for s in GOOD}
    open_: dict[int, Incident] = {}
    out: list[Incident] = []
    for sid, to_status, at in changes:
        if to_status in bad and sid not in open_:
            kind = PUBLIC_STATE[to_status][1].removeprefix("Down: ")
            open_[sid] = Incident(names[sid], kind, at, None)
            out.append(open_[sid])
        elif to_status in good and sid in open_:
            open_.pop(sid).ended = at
    out.sort(key=lambda i: i.started, reverse=True)
    return out[:MAX_INCIDENTS]


MAX_UPDATES = 20  # of one incident, newest first
MAINTENANCE_AHEAD_DAYS = 30


@dataclass
class IncidentReport:
    """An incident as its readers see it: the operators' (and the monitor's) updates, newest first."""

    name: str
    title: str
    status: str
    opened: datetime
    resolved: datetime | None
    updates: list[dict] = field(default_factory=list)  # status, text, at


def _incident_reports(names: dict[int, str], now: datetime) -> list[IncidentReport]:
    """The open incidents of the page's servers, then those of the last UPTIME_DAYS days, with updates."""
    since = now - timedelta(days=UPTIME_DAYS)
    rows = (
        IncidentRow.objects.filter(server_id__in=list(names))
        .filter(models.Q(resolved_at__isnull=True) | models.Q(resolved_at__gte=since))
        .order_by("-opened_at", "-id")[:MAX_INCIDENTS]
    )
    reports = {i.id: IncidentReport(names[i.server_id], i.title, i.status, i.opened_at, i.resolved_at) for i in rows}
    updates = IncidentUpdate.objects.filter(incident_id__in=list(reports)).order_by("-at", "-id")
    for incident_id, status, text, at in updates.values_list("incident_id", "status", "text", "at"):
        report = reports[incident_id]
        if len(report.updates) < MAX_UPDATES:
            report.updates.append({"status": status, "text": text, "at": at})
    return sorted(reports.values(), key=lambda r: (r.resolved is not None, -r.opened.timestamp()))


def _maintenance_ahead(names: dict[int, str], now: datetime) -> list[dict]:
    """Maintenance windows of the page's servers under way or starting within MAINTENANCE_AHEAD_DAYS."""
    rows = MaintenanceWindow.objects.filter(
        server_id__in=list(names), ends_at__gt=now, starts_at__lte=now + timedelta(days=MAINTENANCE_AHEAD_DAYS)
    ).order_by("starts_at", "id")
    return [
        {"name": names[sid], "starts": s, "ends": e, "reason": reason, "now": s <= now}
        for sid, s, e, reason in rows.values_list("server_id", "starts_at", "ends_at", "reason")[:MAX_INCIDENTS]
    ]
