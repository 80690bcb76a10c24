"""Reads for the dashboard pages and /metrics (no writes here).

Every page must stay fast with a million URLs and millions of checks, so nothing here counts a whole
big table per request: recent checks are found by their id range (ids grow with time), counts by state
are cached for a short while, table sizes come from PostgreSQL's estimate, and server history comes
from the hourly rollups or from the (server, checked_at) index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Case, Count, Exists, IntegerField, Model, OuterRef, Q, Subquery, Value, When
from django.utils import timezone

from crawladmin.models import Link, Page, Server, StatusCheck, Url
from crawler.lifecycle import Agent, State
from crawler.status import Category
from monitoring.models import HourlyRollup, MaintenanceWindow, ServerMonitor, StatusChange
from monitoring.selectors import hour_floor

from .cache import cached

FAILING = (State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value)
MAINTENANCE = "maintenance"
UNMONITORED = "unmonitored"
# Worst first: the grid shows servers in trouble at the top.
GRID_STATUSES = ("error", "disconnect", "delay", MAINTENANCE, "unknown", "normal", UNMONITORED)
RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
COUNT_TTL = 30.0  # seconds a cached count may be old


# --------------------------------------------------------------------------------------------------
# Cheap sizes and recent rows


def table_estimate(model: type[Model]) -> int:
    """Rows in the table: PostgreSQL's planner estimate (pg_class.reltuples, kept by autovacuum's
    ANALYZE) instead of a COUNT(*) that would read the whole table; an exact count elsewhere (SQLite:
    the embedded mode, small by nature)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
            row = cursor.fetchone()
        if row and row[0] >= 0:  # -1: never analysed yet
            return int(row[0])
    return model.objects.count()


def first_id_since(model: type[Model], field: str, since: datetime, *, window: int = 32) -> int | None:
    """The smallest id whose `field` is at or after `since`, for append-mostly tables whose ids grow with
    `field` (StatusCheck.checked_at). Gallops back from the newest row, then bisects: a few dozen short
    index range reads of the primary key, however big the table. Rows are not written in perfect order
    (a check is stamped when it started, written when it ended), so each probe looks at the newest of
    the `window` rows at or before it, and one late row cannot hide the recent ones. Approximate at the
    edge, which is good enough for a rate. None: no recent row."""
    qs = model.objects.order_by("-pk")

    def newest_at_or_before(pk: int | None):
        rows = qs if pk is None else qs.filter(pk__lte=pk)
        stamps = [s for s in rows.values_list(field, flat=True)[:window] if s is not None]
        return max(stamps) if stamps else None

    top = qs.values_list("pk", flat=True).first()
    if top is None or (newest_at_or_before(None) or since) < since:
        return None
    hi, step, lo = top, 1, None  # hi: an id with recent rows at or before it
    for _ in range(64):
        probe = hi - step
        stamp = newest_at_or_before(probe) if probe > 0 else None
        if stamp is None or stamp < since:
            lo = max(probe, 0)
            break
        hi, step = probe, step * 2
    if lo is None:
        return hi
    while hi - lo > 1:  # invariant: nothing recent at or before lo; something recent at or before hi
        mid = (lo + hi) // 2
        stamp = newest_at_or_before(mid)
        if stamp is None or stamp < since:
            lo = mid
        else:
            hi = mid
    return max(hi - window + 1, lo + 1)  # the recent row may be any of the window's rows


def recent_checks(*, seconds: float, now: datetime | None = None):
    """StatusCheck rows of the last `seconds`, as a queryset bounded by an id range."""
    now = now or timezone.now()
    since = now - timedelta(seconds=seconds)
    first = first_id_since(StatusCheck, "checked_at", since)
    if first is None:
        return StatusCheck.objects.none()
    return StatusCheck.objects.filter(pk__gte=first, checked_at__gte=since)


def check_rates(*, seconds: float = 60.0) -> dict:
    """Checks per second over the last `seconds`, by category and by agent."""

    def compute() -> dict:
        by = Counter()
        for agent, category, n in (
            recent_checks(seconds=seconds).values_list("agent", "category").annotate(n=Count("id")).order_by()
        ):
            by[("agent", agent)] += n
            by[("category", category)] += n
        return {
            "seconds": seconds,
            "total": sum(n for (kind, _), n in by.items() if kind == "agent") / seconds,
            "by_category": {c.value: by[("category", c.value)] / seconds for c in Category},
            "by_agent": {a.value: by[("agent", a.value)] / seconds for a in Agent},
        }

    return cached(f"check_rates:{seconds}", 5.0, compute)


def url_state_counts() -> dict:
    """URLs by state (excluded ones apart) and excluded by reason; cached COUNT_TTL seconds."""

    def compute() -> dict:
        states = {s.value: 0 for s in State}
        excluded = 0
        rows = Url.objects.values_list("state", "exclusion_reason").annotate(n=Count("id")).order_by()
        reasons: Counter = Counter()
        for state, reason, n in rows:
            if reason:
                excluded += n
                reasons[reason] += n
            else:
                states[state] += n
        return {
            "states": states,
            "excluded": excluded,
            "reasons": dict(reasons.most_common()),
            "total": sum(states.values()) + excluded,
            "computed_at": timezone.now(),
        }

    return cached("url_state_counts", COUNT_TTL, compute)


def monitor_status_counts() -> dict[str, int]:
    """Monitored servers by confirmed status (maintenance apart), and the servers not monitored."""

    def compute() -> dict[str, int]:
        now = timezone.now()
        out = dict.fromkeys(GRID_STATUSES, 0)
        for status, n in _grid_queryset(now).values_list("grid_status").annotate(n=Count("id")).order_by():
            out[status] = n
        return out

    return cached("monitor_status_counts", 5.0, compute)


# --------------------------------------------------------------------------------------------------
# The server grid


def _grid_queryset(now: datetime):
    open_window = MaintenanceWindow.objects.filter(server=OuterRef("pk"), starts_at__lte=now, ends_at__gt=now)
    return Server.objects.filter(alias_of__isnull=True).annotate(
        in_maintenance=Exists(open_window),
        grid_status=Case(
            When(monitor__isnull=True, then=Value(UNMONITORED)),
            When(monitor__enabled=False, then=Value(UNMONITORED)),
            When(in_maintenance=True, then=Value(MAINTENANCE)),
            default="monitor__status",
        ),
    )


@dataclass
class Tile:
    id: int
    origin: str
    group: str
    crawler_num: int | None
    enabled: bool
    status: str
    status_since: datetime | None
    last_check_at: datetime | None
    last_category: str
    latency_ms: float | None
    status_code: int | None

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "status": self.status,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 1),
            "last_check_at": self.last_check_at.isoformat() if self.last_check_at else None,
            "last_category": self.last_category,
            "status_code": self.status_code,
        }


def grid_groups() -> list[str]:
    return list(Server.objects.exclude(group="").order_by("group").values_list("group", flat=True).distinct())


def grid_tiles(*, status: str = "", group: str = "", limit: int = 300, offset: int = 0) -> tuple[int, list[Tile]]:
    """One page of servers for the grid, worst status first: (matching servers, tiles). Each tile's
    last check is the server's newest StatusCheck (any agent), found through the (server, checked_at)
    index, one probe per tile."""
    now = timezone.now()
    qs = _grid_queryset(now)
    if status:
        qs = qs.filter(grid_status=status)
    if group:
        qs = qs.filter(group=group)
    severity = Case(
        *(When(grid_status=s, then=Value(i)) for i, s in enumerate(GRID_STATUSES)), output_field=IntegerField()
    )
    newest = StatusCheck.objects.filter(server=OuterRef("pk")).order_by("-checked_at").values("pk")[:1]
    rows = list(
        qs.annotate(severity=severity, last_check_id=Subquery(newest))
        .order_by("severity", "host", "port", "id")
        .values(
            "id",
            "scheme",
            "host",
            "port",
            "group",
            "crawler_num",
            "enabled",
            "grid_status",
            "last_check_id",
            "monitor__status_since",
        )[offset : offset + limit]
    )
    checks = StatusCheck.objects.in_bulk([r["last_check_id"] for r in rows if r["last_check_id"]])
    tiles = []
    for r in rows:
        check = checks.get(r["last_check_id"])
        tiles.append(
            Tile(
                id=r["id"],
                origin=Server(scheme=r["scheme"], host=r["host"], port=r["port"]).origin,
                group=r["group"],
                crawler_num=r["crawler_num"],
                enabled=r["enabled"],
                status=r["grid_status"],
                status_since=r["monitor__status_since"],
                last_check_at=check.checked_at if check else None,
                last_category=check.category if check else "",
                latency_ms=check.latency_ms if check and check.status_code is not None else None,
                status_code=check.status_code if check else None,
            )
        )
    return qs.count(), tiles


# --------------------------------------------------------------------------------------------------
# One server


def server_latency_series(*, server_id: int, range_name: str, now: datetime | None = None) -> dict:
    """Latency points for the chart: the raw checks over the last hour, hourly rollups (mean, p95,
    max) over longer ranges. Labels are ISO times (UTC)."""
    now = now or timezone.now()
    span = RANGES[range_name]
    if range_name == "1h":
        checks = StatusCheck.objects.filter(server_id=server_id, checked_at__gte=now - span).order_by("checked_at")
        monitor = checks.filter(agent=Agent.MONITOR.value)
        rows = list(
            (monitor if monitor.exists() else checks).values_list("checked_at", "latency_ms", "category")[:5000]
        )
        return {
            "kind": "checks",
            "labels": [at.isoformat() for at, _, _ in rows],
            "series": {"latency": [round(ms, 1) for _, ms, _ in rows]},
            "categories": [cat for _, _, cat in rows],
        }
    rollups = HourlyRollup.objects.filter(server_id=server_id, hour__gt=hour_floor(now) - span).order_by("hour")
    rows = list(rollups.values_list("hour", "latency_mean_ms", "latency_p95_ms", "latency_max_ms"))

    def r(v):
        return None if v is None else round(v, 1)

    return {
        "kind": "rollups",
        "labels": [h.isoformat() for h, *_ in rows],
        "series": {
            "mean": [r(m) for _, m, _, _ in rows],
            "p95": [r(p) for _, _, p, _ in rows],
            "max": [r(x) for _, _, _, x in rows],
        },
        "categories": [],
    }


def server_recent_checks(*, server_id: int, limit: int = 60) -> list[StatusCheck]:
    """The server's newest checks, oldest first (the bar reads left to right)."""
    qs = StatusCheck.objects.filter(server_id=server_id).order_by("-checked_at", "-id")
    return list(
        reversed(
            qs.only(
                "checked_at",
                "status_code",
                "category",
                "failure_kind",
                "detail",
                "latency_ms",
                "agent",
                "requested_url",
            )[:limit]
        )
    )


def server_timeline_recent(*, server_id: int, limit: int = 100) -> list[StatusChange]:
    return list(StatusChange.objects.filter(server_id=server_id).order_by("-at", "-id")[:limit])


def server_failure_kinds(*, server_id: int, days: int = 7, now: datetime | None = None) -> dict:
    """Why this server's requests failed over the last `days` (checks), and its failing URLs by kind."""
    now = now or timezone.now()
    checks = StatusCheck.objects.filter(server_id=server_id, checked_at__gte=now - timedelta(days=days))
    by_check = checks.exclude(failure_kind="").values_list("failure_kind").annotate(n=Count("id")).order_by("-n")
    urls = Url.objects.filter(server_id=server_id, state__in=FAILING)
    by_url = urls.values_list("failure_kind").annotate(n=Count("id")).order_by("-n")
    return {"days": days, "checks": list(by_check), "urls": [(k or "(none)", n) for k, n in by_url]}


def server_url_states(*, server_id: int) -> dict[str, int]:
    out = {s.value: 0 for s in State}
    for state, n in Url.objects.filter(server_id=server_id).values_list("state").annotate(n=Count("id")).order_by():
        out[state] = n
    return out


# --------------------------------------------------------------------------------------------------
# Load heatmap (server x hour of day), from the stored 24-hour load profiles


@dataclass
class HeatRow:
    server_id: int
    origin: str
    cells: list[tuple[float | None, float | None]]  # (mean ms, 0..1 of the row's own range)


def heat_row(server_id: int, origin: str, profile: Sequence[float | None]) -> HeatRow:
    """Each row is scaled to its own range: the point is each server's best and worst hours, which the
    load-aware scheduler uses, not a comparison of servers' absolute speed."""
    known = [v for v in profile if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    span = hi - lo
    cells = [(v, None if v is None else ((v - lo) / span if span else 0.0)) for v in profile]
    return HeatRow(server_id, origin, cells)


def load_heatmap(*, group: str = "", limit: int = 200) -> list[HeatRow]:
    qs = ServerMonitor.objects.filter(load_profile__isnull=False).select_related("server")
    if group:
        qs = qs.filter(server__group=group)
    rows = qs.order_by("server__host", "server__port").only(
        "server_id", "load_profile", "server__scheme", "server__host", "server__port"
    )[:limit]
    return [heat_row(m.server_id, m.server.origin, m.load_profile) for m in rows if len(m.load_profile or []) == 24]


# --------------------------------------------------------------------------------------------------
# The dead-link report


def dead_link_sites() -> list[dict]:
    """Sites whose pages link to URLs that are Dead or failing: per site, broken links, the pages that
    carry them and the distinct failing targets. Starts from the failing URLs (the state index) and
    follows Link's to_url index, so it costs what there is to report, not the size of the link table."""

    def compute() -> list[dict]:
        rows = (
            Link.objects.filter(to_url__state__in=FAILING, to_url__exclusion_reason="")
            .values("from_url__server_id")
            .annotate(
                links=Count("id"),
                pages=Count("from_url_id", distinct=True),
                targets=Count("to_url_id", distinct=True),
                dead=Count("to_url_id", distinct=True, filter=Q(to_url__state=State.DEAD.value)),
            )
            .order_by("-links")
        )
        rows = list(rows[:1000])
        servers = Server.objects.in_bulk([r["from_url__server_id"] for r in rows])
        return [
            {"server_id": r["from_url__server_id"], "origin": servers[r["from_url__server_id"]].origin, **r}
            for r in rows
            if r["from_url__server_id"] in servers
        ]

    return cached("dead_link_sites", COUNT_TTL, compute)


def dead_links_of(*, server_id: int, limit: int = 2000) -> list[dict]:
    """The site's pages that link to Dead or failing URLs, each link with the target's state and status."""
    rows = (
        Link.objects.filter(from_url__server_id=server_id, to_url__state__in=FAILING, to_url__exclusion_reason="")
        .order_by("from_url__url", "to_url__url")
        .values(
            "from_url_id",
            "from_url__url",
            "to_url_id",
            "to_url__url",
            "to_url__state",
            "to_url__last_status",
            "to_url__failure_kind",
            "to_url__last_checked_at",
        )[:limit]
    )
    rows = list(rows)
    titles = dict(Page.objects.filter(url_id__in={r["from_url_id"] for r in rows}).values_list("url_id", "title"))
    for r in rows:
        r["title"] = titles.get(r["from_url_id"], "")
    return rows
