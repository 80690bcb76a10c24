"""Reads over the monitoring tables (no writes here): timeline, uptime, load profiles, maintenance."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, Exists, OuterRef, Q, Value, When
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from crawler.lifecycle import Agent
from crawler.status import BAD, GOOD, STALE_AFTER_INTERVALS, Status
from crawler.windows import in_dated_windows

from .check_stats import COUNT_FIELDS, CategoryCounts, Uptime, uptime
from .kinds import CRAWLED_SCHEMES, Kind, shown_name
from .load_profile import load_profile
from .models import HeartbeatPing, HourlyRollup, MaintenanceWindow, ServerCertificate, ServerMonitor

UPTIME_WINDOWS = {"24h": 24, "7d": 7 * 24, "30d": 30 * 24}  # in hourly buckets


def hour_floor(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def maintenance_windows(
    *, server_ids: Iterable[int], start: datetime, end: datetime
) -> dict[int, list[tuple[datetime, datetime]]]:
    """Each server's windows that overlap [start, end]."""
    out: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
    rows = MaintenanceWindow.objects.filter(server_id__in=list(server_ids), starts_at__lte=end, ends_at__gt=start)
    for server_id, s, e in rows.values_list("server_id", "starts_at", "ends_at"):
        out[server_id].append((s, e))
    return out


def monitors_selected(*, group: str | None = None, server_ids: Sequence[int] | None = None) -> list[int]:
    """Ids of the enabled monitored servers, optionally of one group."""
    qs = ServerMonitor.objects.filter(enabled=True, server__enabled=True)
    if group is not None:
        qs = qs.filter(server__group=group)
    if server_ids is not None:
        qs = qs.filter(server_id__in=server_ids)
    return list(qs.order_by("server_id").values_list("server_id", flat=True))


def monitor_intervals() -> list[float]:
    """The distinct per-server check intervals (few: operators set them by hand or by import)."""
    qs = ServerMonitor.objects.exclude(interval_s=None).values_list("interval_s", flat=True).distinct()
    return sorted(qs[:100])


def _stale(now: datetime, intervals: Sequence[float]) -> Q:
    """Monitors whose last check is older than STALE_AFTER_INTERVALS of their interval: one condition per
    distinct interval, so the test stays plain column comparisons every database reads alike."""
    cond = Q(monitor__interval_s__isnull=True, monitor__last_check_at__lt=now - stale_span(settings.MONITOR_INTERVAL))
    for interval in intervals:
        cond |= Q(monitor__interval_s=interval, monitor__last_check_at__lt=now - stale_span(interval))
    return cond


def stale_span(interval_s: float) -> timedelta:
    """How long a monitor checking every `interval_s` seconds may go unchecked before it shows stale."""
    return timedelta(seconds=STALE_AFTER_INTERVALS * interval_s)


def servers_shown(*, now: datetime | None = None, intervals: Sequence[float] | None = None):
    """Servers (aliases apart) annotated with `shown_status`: what every reader shows for a server, the one
    rule the grid, its counts, the server page, the API, /metrics and the status pages ask.

    Beyond the confirmed status (the monitor's row): unmonitored without an enabled monitor, maintenance
    while a window is open, stale when the monitor has not checked for STALE_AFTER_INTERVALS intervals (no
    worker, a stuck queue: the confirmed status is then old news), unconfirmed while a good server's newest
    checks failed but not yet often enough to confirm it down. `intervals`: the distinct check intervals,
    when the caller keeps them cached (monitor_intervals otherwise)."""
    now = now or timezone.now()
    intervals = monitor_intervals() if intervals is None else intervals
    open_window = MaintenanceWindow.objects.filter(server=OuterRef("pk"), starts_at__lte=now, ends_at__gt=now)
    return Server.objects.filter(alias_of__isnull=True).annotate(
        in_maintenance=Exists(open_window),
        shown_status=Case(
            When(monitor__isnull=True, then=Value(Status.UNMONITORED.value)),
            When(monitor__enabled=False, then=Value(Status.UNMONITORED.value)),
            When(in_maintenance=True, then=Value(Status.MAINTENANCE.value)),
            When(_stale(now, intervals), then=Value(Status.STALE.value)),
            When(
                monitor__status__in=[s.value for s in GOOD],
                monitor__candidate__in=[s.value for s in BAD],
                then=Value(Status.UNCONFIRMED.value),
            ),
            default="monitor__status",
        ),
    )


def server_shown_status(*, server_id: int, now: datetime | None = None) -> str:
    """One server's shown status (servers_shown); "unmonitored" for an alias or an unknown id."""
    row = servers_shown(now=now).filter(id=server_id).values_list("shown_status", flat=True).first()
    return row or Status.UNMONITORED.value


def uptime_counts(
    *, server_ids: Sequence[int] | None = None, now: datetime | None = None
) -> dict[int, dict[str, list[int]]]:
    """Per server (all, or these), per uptime window: its checks by category, [normal, delay, disconnect,
    error, maintenance]. The one source of uptime: the server page, the grid's tiles and the status page
    all read it.

    A window of k hours is the current hourly bucket and the k-1 before it. For the servers named, the
    last LIVE_HOURS buckets are counted from the raw checks (the (server, checked_at) index), so a failed
    check lowers uptime at once instead of after the next rollup run (beat's, every five minutes, which
    may also not have finished the previous hour yet); older hours are summed from the hourly rollups
    in SQL (a month is 720 rollups a server). For every server at once (beat's ServerRollup) the raw
    checks would be a scan of the newest checks of all servers: there the rollups stand for every hour,
    as fresh as the last rollup run."""
    now = now or timezone.now()
    current = hour_floor(now)
    ids = None if server_ids is None else list(server_ids)
    if ids is not None and not ids:
        return {}
    live_from = current - timedelta(hours=LIVE_HOURS - 1) if ids is not None else current + timedelta(hours=1)
    out = _rollup_counts(ids, current, live_from)
    if ids is not None:
        for sid, counts in _live_counts(ids, live_from, now).items():
            windows = out.setdefault(sid, {name: [0] * len(COUNT_FIELDS) for name in UPTIME_WINDOWS})
            for name in UPTIME_WINDOWS:  # every window reaches back past the live hours
                windows[name] = [a + b for a, b in zip(windows[name], counts, strict=True)]
    return out


LIVE_HOURS = 2  # the current hour and the one before: beat's rollups may not have closed it yet


def _rollup_counts(ids: list[int] | None, current: datetime, until: datetime) -> dict[int, dict[str, list[int]]]:
    """uptime_counts' figures from the hourly rollups of the hours before `until`."""
    longest = max(UPTIME_WINDOWS.values())
    windows = [(name, current - timedelta(hours=hours - 1)) for name, hours in UPTIME_WINDOWS.items()]
    # CASE rather than FILTER: SQLite (the embedded mode) reads it too.
    sums = ", ".join(
        f"COALESCE(SUM(CASE WHEN hour >= %s THEN {field} ELSE 0 END), 0)" for _ in windows for field in COUNT_FIELDS
    )
    at = connection.ops.adapt_datetimefield_value  # as the ORM would pass them (SQLite: naive UTC text)
    params = [at(start) for _, start in windows for _ in COUNT_FIELDS]
    params += [at(current - timedelta(hours=longest)), at(until)]
    where = "hour > %s AND hour < %s"
    if ids is not None:
        where += f" AND server_id IN ({', '.join(['%s'] * len(ids))})"
        params += ids
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT server_id, {sums} FROM {HourlyRollup._meta.db_table} WHERE {where} GROUP BY server_id", params
        )
        rows = cursor.fetchall()
    n = len(COUNT_FIELDS)
    return {
        sid: {name: [int(v) for v in counts[i * n : (i + 1) * n]] for i, (name, _) in enumerate(windows)}
        for sid, *counts in rows
    }


def _live_counts(ids: list[int], since: datetime, now: datetime) -> dict[int, list[int]]:
    """The monitor's checks of these servers since `since`, by category (COUNT_FIELDS' order), a check
    inside a maintenance window counted as maintenance, as the rollups count it."""
    checks = StatusCheck.objects.filter(
        server_id__in=ids, checked_at__gte=since, checked_at__lte=now, agent=Agent.MONITOR.value
    )
    windows = maintenance_windows(server_ids=ids, start=since, end=now)
    out: dict[int, list[int]] = {}
    index = {name: i for i, name in enumerate(COUNT_FIELDS)}
    plain = checks.exclude(server_id__in=list(windows)).values_list("server_id", "category").annotate(n=Count("id"))
    for sid, category, n in plain.order_by():
        if category in index:  # a pending crawl check, were one ever here, is no answer
            out.setdefault(sid, [0] * len(COUNT_FIELDS))[index[category]] += n
    paused = checks.filter(server_id__in=list(windows)).values_list("server_id", "checked_at", "category")
    for sid, at, category in paused:
        if category in index:
            name = Status.MAINTENANCE.value if in_dated_windows(windows[sid], at) else category
            out.setdefault(sid, [0] * len(COUNT_FIELDS))[index[name]] += 1
    return out


def uptime_of(counts: dict[str, list[int]] | None) -> dict[str, Uptime]:
    """Uptime per window from uptime_counts' figures for one server (None: no rollups)."""
    return {name: uptime(CategoryCounts(*(counts or {}).get(name, ()))) for name in UPTIME_WINDOWS}


def server_load_profile(*, server_id: int, days: int | None = None, now: datetime | None = None) -> list[float | None]:
    """Mean response time (ms) per hour of day (settings.TIME_ZONE) over the last `days` days."""
    now = now or timezone.now()
    days = days or settings.MONITOR_PROFILE_DAYS
    return load_profile(_profile_rows(HourlyRollup.objects.filter(server_id=server_id), now, days))


def _profile_rows(qs, now: datetime, days: int):
    since = hour_floor(now) - timedelta(days=days)
    for hour, timed, mean in qs.filter(hour__gte=since, timed__gt=0).values_list("hour", "timed", "latency_mean_ms"):
        yield timezone.localtime(hour).hour, timed, mean


def monitor_names(*, server_ids: Iterable[int]) -> dict[int, str]:
    """What alerts and pages call each server (monitoring.kinds.shown_name): the monitor's name, or its
    target as people write it (``db.example.org:5432``, ``campus.test``, a web server's origin)."""
    ids = list(server_ids)
    named = dict(ServerMonitor.objects.filter(server_id__in=ids).exclude(name="").values_list("server_id", "name"))
    servers = Server.objects.filter(id__in=[i for i in ids if i not in named]).only("scheme", "host", "port")
    unnamed = {s.id: shown_name(name="", scheme=s.scheme, host=s.host, port=s.port, origin=s.origin) for s in servers}
    return {**unnamed, **named}


def monitor_kinds(*, server_ids: Iterable[int]) -> dict[int, str]:
    """Each monitored server's monitor kind (http, tcp, dns, heartbeat)."""
    return dict(ServerMonitor.objects.filter(server_id__in=list(server_ids)).values_list("server_id", "kind"))


def servers_by_id(*, server_ids: Iterable[int]) -> dict[int, Server]:
    return Server.objects.in_bulk(list(server_ids))


def server_certificate(*, server_id: int, now: datetime | None = None) -> dict | None:
    """The certificate the server's last https check saw, with the days left; None for plain http."""
    cert = ServerCertificate.objects.filter(server_id=server_id).first()
    if cert is None:
        return None
    now = now or timezone.now()
    days = None if cert.not_after is None else (cert.not_after - now).total_seconds() / 86400.0
    return {"cert": cert, "days_left": days, "expired": days is not None and days < 0}


PINGS_SHOWN = 10


def monitor_kind_details(*, server_id: int) -> dict | None:
    """What a monitor's page shows of its kind, besides what every kind shows (status, checks, uptime):
    a heartbeat's period, grace and last pings; a TCP port's connect and TLS times and banner; a DNS
    name's answer and the nameserver asked. None for a server without a monitor."""
    m = ServerMonitor.objects.select_related("server").filter(server_id=server_id).first()
    if m is None:
        return None
    kind = m.kind or Kind.HTTP.value
    out: dict = {"kind": kind, "name": m.shown_name, "named": bool(m.name), "target": m.target_text}
    out["crawled"] = m.server.scheme in CRAWLED_SCHEMES
    if kind == Kind.HEARTBEAT.value:
        pings = HeartbeatPing.objects.filter(server_id=server_id).order_by("-at", "-id")[:PINGS_SHOWN]
        out.update(
            period_s=m.period_s, grace_s=m.grace_s, token=m.ping_token or "",
            last_ping_at=m.last_ping_at, last_ping_kind=m.last_ping_kind, started_at=m.ping_started_at,
            pings=list(pings.values("at", "kind", "body", "source")),
        )  # fmt: skip
        return out
    passed = (
        StatusCheck.objects.filter(server_id=server_id, agent=Agent.MONITOR.value, category__in=[s.value for s in GOOD])
        .order_by("-checked_at", "-id")
        .values("checked_at", "detail", "dns_ms", "connect_ms", "latency_ms")
        .first()
    )
    out["last_passed"] = passed
    if kind == Kind.TCP.value:
        out.update(tls=m.tcp_tls, banner=m.tcp_banner)
    elif kind == Kind.DNS.value:
        out.update(record_type=m.dns_record_type or "A", expected=m.dns_expected, nameserver=m.dns_server)
    return out
