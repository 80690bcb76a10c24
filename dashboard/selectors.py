"""Reads for the dashboard pages, the API's summary and /metrics.

Every page must stay fast with a million URLs and millions of checks, so nothing here counts a big table
per request: the crawl's counts, the check totals and the dead-link report are snapshots kept by
dashboard.rollups (each with the time it was computed, which the pages show); a server's URL and failure
figures come from its ServerRollup row, a site's dead links from the link reports' record
(reports.LinkBreak); recent checks are found by their id range (ids grow with time), table sizes come
from PostgreSQL's estimate, and server history from the hourly rollups or the (server, checked_at)
index. The only write reachable from here is a stale rollup's read-through refresh
(dashboard.rollups.figures).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Case, Count, IntegerField, Model, OuterRef, Subquery, Value, When
from django.urls import reverse
from django.utils import timezone

from crawlcore.db import estimates, features, raw
from crawlcore.models import BeatJobRun, Page, Server, StatusCheck
from crawlcore.selectors import check_category_counts, check_time_floor
from crawlcore.selectors_health import servers_health_summaries
from crawlcore.services.schedule import schedule_table
from crawlcore.templatetags.times import ago_text, when_text
from crawler.lifecycle import Agent, State
from crawler.status import Category, Status
from monitoring.models import HourlyRollup, ServerCertificate, ServerMonitor, StatusChange
from monitoring.selectors import hour_floor, monitor_intervals, servers_shown, uptime_counts, uptime_of

from . import rollups
from .cache import cached
from .formats import heat_scale, ms
from .idrange import first_id_since
from .models import CrawlSample, ServerRollup

FAILING = rollups.FAILING
SERVER_ANSWERS = rollups.SERVER_ANSWERS
# Plain strings (not the enum's members) for the SQL expressions below.
MAINTENANCE = Status.MAINTENANCE.value
UNMONITORED = Status.UNMONITORED.value
STALE = Status.STALE.value
UNCONFIRMED = Status.UNCONFIRMED.value
# Worst first: the grid shows servers in trouble at the top.
_GRID_ORDER = (
    Status.ERROR,
    Status.DISCONNECT,
    Status.UNCONFIRMED,
    Status.DELAY,
    Status.STALE,
    Status.MAINTENANCE,
    Status.UNKNOWN,
    Status.NORMAL,
)
GRID_STATUSES = (*(s.value for s in _GRID_ORDER), UNMONITORED)
RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}

# How old each figure may be when a reader gets it (seconds). Beat refreshes the rollups well within
# theirs (every 60 s, dead links every 300 s), so readers compute only when beat is late or absent.
API_COUNTS_MAX_AGE = 5.0  # /api/summary: scripts poll it during a crawl and expect it to move
PAGE_COUNTS_MAX_AGE = 60.0  # the crawl page and /metrics
CHECK_TOTALS_MAX_AGE = 600.0  # plus the live count of the newest checks: exact whatever its age
SERVER_ROLLUP_MAX_AGE = 300.0
DEAD_LINKS_MAX_AGE = 900.0
SHARED_VIEW_TTL = 5.0  # what every viewer sees alike (grid tiles, counts by status)
DEAD_LINKS_PAGE = 50


# --------------------------------------------------------------------------------------------------
# Cheap sizes and recent rows


def table_estimate(model: type[Model]) -> int:
    """Rows in the table, estimated without reading it (crawlcore.db.estimates)."""
    return estimates.table_rows(model)


def recent_checks(*, seconds: float, now: datetime | None = None):
    """StatusCheck rows of the last `seconds`, as a queryset bounded by an id range."""
    now = now or timezone.now()
    since = now - timedelta(seconds=seconds)
    first = first_id_since(StatusCheck, "checked_at", since, floor=check_time_floor(since))
    if first is None:
        return StatusCheck.objects.none()
    return StatusCheck.objects.filter(pk__gte=first, checked_at__gte=since)


def check_rates(*, seconds: float = 60.0) -> dict:
    """Finished checks per second over the last `seconds`, by category and by agent."""

    def compute() -> dict:
        by = Counter()
        recent = recent_checks(seconds=seconds).filter(category__in=SERVER_ANSWERS)
        for agent, category, n in recent.values_list("agent", "category").annotate(n=Count("id")).order_by():
            by[("agent", agent)] += n
            by[("category", category)] += n
        return {
            "seconds": seconds,
            "total": sum(n for (kind, _), n in by.items() if kind == "agent") / seconds,
            "by_category": {c.value: by[("category", c.value)] / seconds for c in Category},
            "by_agent": {a.value: by[("agent", a.value)] / seconds for a in Agent},
        }

    return cached(f"check_rates:{seconds}", 5.0, compute)


# --------------------------------------------------------------------------------------------------
# The crawl in numbers (snapshots kept by dashboard.rollups)


def crawl_figures(*, max_age: float = PAGE_COUNTS_MAX_AGE) -> rollups.Figures:
    """crawl_summary's counts (URLs by state and exclusion, failure kinds, servers, pages, links, work due)
    at most `max_age` seconds old, shared by every process."""
    return rollups.figures(rollups.CRAWL_SUMMARY, max_age=max_age, compute=rollups.crawl_summary_compute)


def check_totals() -> dict[str, int]:
    """Status checks by category, exact: the rollup of every settled check plus a live count of the newer
    ones (an id range: the last few minutes of checks, whatever the table's size)."""
    rollup = rollups.figures(rollups.CHECK_TOTALS, max_age=CHECK_TOTALS_MAX_AGE, compute=rollups.check_totals_compute)
    totals = dict(rollup.data["categories"])
    for category, n in check_category_counts(rollups.checks_after(rollup.data)).items():
        totals[category] = totals.get(category, 0) + n
    return totals


def summary_counts() -> dict:
    """What /api/summary reports: crawl_summary's figures (at most API_COUNTS_MAX_AGE old; `as_of` says
    when they were counted) and the check totals (exact)."""
    crawl = crawl_figures(max_age=API_COUNTS_MAX_AGE)
    return {"as_of": crawl.computed_at.isoformat(), **crawl.data, "checks": check_totals()}


def url_state_counts() -> dict:
    """URLs by state (excluded ones apart) and excluded by reason, as of `computed_at` (at most
    PAGE_COUNTS_MAX_AGE seconds ago)."""
    crawl = crawl_figures()
    reasons = dict(sorted(crawl.data["excluded"].items(), key=lambda kv: (-kv[1], kv[0])))
    return {
        "states": crawl.data["states"],
        "excluded": sum(reasons.values()),
        "reasons": reasons,
        "not_followed": crawl.data.get("not_followed", {}),  # absent from a snapshot of an older version
        "total": crawl.data["urls"],
        "computed_at": crawl.computed_at,
    }


CRAWL_HISTORY = timedelta(hours=24)
CRAWL_HISTORY_POINTS = 360  # a day of minute samples is 1,440: every fourth is plenty for a line chart
CRAWL_HISTORY_TTL = 15.0  # beat samples once a minute; a running crawl command more often at first


def crawl_history(*, now: datetime | None = None) -> ChartData:
    """The crawl's URLs by state over the last CRAWL_HISTORY, from its samples (dashboard.rollups keeps
    one per computation of the counts), thinned to at most CRAWL_HISTORY_POINTS (every k-th, counted back
    from the newest, which is always kept), as chart JSON: {"labels": [ISO times], "series": {state:
    [URLs]}}. Shared by every viewer for CRAWL_HISTORY_TTL seconds."""
    now = now or timezone.now()

    def compute() -> ChartData:
        rows = list(
            CrawlSample.objects.filter(at__gt=now - CRAWL_HISTORY, at__lte=now)
            .order_by("at")
            .values_list("at", "states", "excluded")
        )
        stride = -(-len(rows) // CRAWL_HISTORY_POINTS) or 1
        kept = rows[::-1][::stride][::-1]  # counted back from the newest, so the newest is always drawn
        names = [s.value for s in State]
        series: dict[str, list[int]] = {name: [] for name in names}
        series["excluded"] = []
        for _, states, excluded in kept:
            for name in names:
                series[name].append(states.get(name, 0))
            series["excluded"].append(excluded)
        data = {"labels": [at.isoformat() for at, _, _ in kept], "series": series}
        text = json.dumps(data, separators=(",", ":")).translate(_JSON_SCRIPT_ESCAPES)
        return ChartData("samples", len(kept), text)

    return cached("crawl_history", CRAWL_HISTORY_TTL, compute)


PRIORITY_ROWS = 10  # the priority table's first rows: the servers sent first in each hour
PRIORITY_LISTED = 20  # this hour's first servers, listed with their profiles


def crawl_priority(*, now: datetime | None = None) -> dict:
    """The scheduler's priority table (seed 000) as the crawl page shows it: the active policy's server
    order for each hour of the day (its first PRIORITY_ROWS rows; cells are server ids), and this hour's
    first PRIORITY_LISTED servers with their best hour, their mean response time now and any pause."""
    table = schedule_table(now=now)
    # As the dispatcher orders them (ServerOrder.order): servers without a profile after the others.
    columns = [col + [sid for sid in table.unprofiled if sid not in col] for col in table.columns]
    depth = min(PRIORITY_ROWS, max((len(col) for col in columns), default=0))
    rows = [[col[r] if r < len(col) else None for col in columns] for r in range(depth)]
    origins = {sid: info["origin"] for sid, info in table.servers.items()}
    listed = []
    for sid in columns[table.hour][:PRIORITY_LISTED]:
        info = table.servers[sid]
        profile = info["profile_ms"]
        listed.append(
            {
                "id": sid,
                "origin": info["origin"],
                "best_hour": info["best_hour"],
                "ms_now": None if profile is None else profile[table.hour],
                "paused_until": datetime.fromisoformat(info["paused_until"]) if info["paused_until"] else None,
            }
        )
    return {
        "policy": table.policy,
        "hour": table.hour,
        "pause_lookahead": table.pause_lookahead,
        "servers": len(table.servers),
        "rows": [[(sid, origins.get(sid, "")) for sid in row] for row in rows],
        "listed": listed,
        "unprofiled": len(table.unprofiled),
    }


def monitor_status_counts(*, groups: frozenset[str] | None = None) -> dict[str, int]:
    """Monitored servers by confirmed status (maintenance apart), and the servers not monitored; of the
    servers in `groups` only, when given (a reader limited to them, crawlcore.access)."""

    def compute() -> dict[str, int]:
        now = timezone.now()
        out = dict.fromkeys(GRID_STATUSES, 0)
        qs = _grid_queryset(now) if groups is None else _grid_queryset(now).filter(group__in=groups)
        for status, n in qs.values_list("shown_status").annotate(n=Count("id")).order_by():
            out[status] = n
        return out

    key = "monitor_status_counts" if groups is None else f"monitor_status_counts:{sorted(groups)}"
    return cached(key, SHARED_VIEW_TTL, compute)


# --------------------------------------------------------------------------------------------------
# The server grid


def _intervals() -> list[float]:
    """The distinct per-server check intervals, kept for 30 s in this process."""
    return cached("monitor_intervals", 30.0, monitor_intervals)


def grid_refresh_seconds() -> int:
    """How often an open grid polls: half the shortest check interval, between 5 and 30 s, so a change
    shows within one interval of the check that made it (the demo checks every 10 s: every 5 s)."""
    shortest = min([settings.MONITOR_INTERVAL, *_intervals()])
    return int(min(30.0, max(5.0, shortest / 2)))


def _grid_queryset(now: datetime):
    """Servers with `shown_status` (monitoring.selectors.servers_shown, the one rule), the distinct check
    intervals from this process's cache."""
    return servers_shown(now=now, intervals=_intervals())


TILE_BAR = 30  # the tile's bar: the server's last checks by the monitor


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
    href: str = ""
    ago: str = ""  # "3 minutes ago", as of when the tile was made
    note: str = ""  # what the status means here: "stale · last check …", "failed 1 of 2 to confirm", "down since …"
    uptime_24h: float | None = None
    bar: list[str] = field(default_factory=list)  # the last TILE_BAR monitor checks' categories, oldest first
    cert_days: float | None = None  # days the https certificate has left (negative: expired); None: no https
    cert_error: str = ""  # the last check's TLS failure
    health: str = ""  # the crawl's view when it holds or slows the server: "rate_limited (crawl): HTTP 429 …"

    @property
    def cert_text(self) -> str:
        if self.cert_error:
            return "certificate invalid"
        if self.cert_days is None:
            return ""
        return "certificate expired" if self.cert_days < 0 else f"certificate {self.cert_days:.0f} d left"

    @property
    def latency_text(self) -> str:
        return ms(self.latency_ms)

    @property
    def uptime_text(self) -> str:
        return "–" if self.uptime_24h is None else f"{self.uptime_24h:.2f} %"

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "status": self.status,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 1),
            "last_check_at": self.last_check_at.isoformat() if self.last_check_at else None,
            "last_category": self.last_category,
            "status_code": self.status_code,
            "note": self.note,
            "uptime_24h": None if self.uptime_24h is None else round(self.uptime_24h, 2),
            "bar": self.bar,
            "cert": self.cert_text,
            "health": self.health,
        }


def grid_groups() -> list[str]:
    def compute() -> list[str]:
        return list(Server.objects.exclude(group="").order_by("group").values_list("group", flat=True).distinct())

    return cached("grid_groups", 30.0, compute)


def _every(seconds: float) -> str:
    return f"every {seconds / 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"every {seconds:g} s"


def tile_note(*, status: str, row: dict, now: datetime) -> str:
    """The line under a tile's badge that says why it shows what it shows."""
    interval = row["monitor__interval_s"] or settings.MONITOR_INTERVAL
    last = row["monitor__last_check_at"]
    if status == STALE:
        return f"stale · last check {ago_text(last, now)} ({_every(interval)})"
    if status == UNCONFIRMED:
        need = row["monitor__fail_after"] or settings.MONITOR_FAIL_AFTER
        return f"failed {row['monitor__streak']} of {need} to confirm"
    if status in (Status.DISCONNECT, Status.ERROR) and row["monitor__status_since"]:
        return f"down since {when_text(row['monitor__status_since'])}"
    return ""


def tile_certificates(*, server_ids: Sequence[int], now: datetime) -> dict[int, tuple[float | None, str]]:
    """(days left, TLS error) of each server's certificate as its last https check saw it (alerts' issue
    keeps them on monitoring's ServerCertificate), in one query."""
    if not server_ids:
        return {}
    rows = ServerCertificate.objects.filter(server_id__in=list(server_ids)).values_list(
        "server_id", "not_after", "error"
    )
    return {
        sid: (None if not_after is None else (not_after - now).total_seconds() / 86400.0, error)
        for sid, not_after, error in rows
    }


def tile_bars(*, server_ids: Sequence[int], now: datetime) -> dict[int, list[str]]:
    """Each server's last TILE_BAR monitor checks' categories, oldest first, in one query: the (server,
    checked_at) index read back over TILE_BAR and a half of the longest interval, so a server checked
    on time has its TILE_BAR checks there and nothing older is read."""
    if not server_ids:
        return {}
    longest = max([settings.MONITOR_INTERVAL, *_intervals()])
    since = now - timedelta(seconds=longest * TILE_BAR * 1.5)
    rows = (
        StatusCheck.objects.filter(server_id__in=list(server_ids), checked_at__gte=since, agent=Agent.MONITOR.value)
        .order_by("server_id", "-checked_at", "-id")
        .values_list("server_id", "category")
    )
    out: dict[int, list[str]] = {}
    for sid, category in rows:
        bar = out.setdefault(sid, [])
        if len(bar) < TILE_BAR:
            bar.append(category)
    return {sid: bar[::-1] for sid, bar in out.items()}


def server_shown_status(*, server_id: int, now: datetime | None = None) -> tuple[str, str]:
    """(status, note) as the server's tile shows them: the one status the grid, its counts and the
    server's page agree on."""
    now = now or timezone.now()
    fields = ("shown_status", *(f"monitor__{f}" for f in ("status_since", "last_check_at", "interval_s")))
    row = _grid_queryset(now).filter(id=server_id).values(*fields, "monitor__streak", "monitor__fail_after").first()
    if row is None:
        return UNMONITORED, ""
    return row["shown_status"], tile_note(status=row["shown_status"], row=row, now=now)


LAST_CHECK_WINDOW = timedelta(days=2)


def _newest_check(floor: datetime | None) -> Subquery:
    """The id of a server's newest finished check (at or after `floor`, when given), for Subquery."""
    answers = StatusCheck.objects.filter(server=OuterRef("pk"), category__in=SERVER_ANSWERS)
    if floor is not None:
        answers = answers.filter(checked_at__gte=floor)
    return Subquery(answers.order_by("-checked_at").values("pk")[:1])


def _older_newest_checks(rows: list[dict]) -> list[int]:
    """For the grid rows with no check since the window's floor: their newest check from any time, set on
    the row; returns those ids."""
    missing = {r["id"]: r for r in rows if not r["last_check_id"]}
    if not missing:
        return []
    found = list(
        Server.objects.filter(id__in=list(missing)).annotate(last=_newest_check(None)).values_list("id", "last")
    )
    for sid, last in found:
        missing[sid]["last_check_id"] = last
    return [last for _, last in found if last]


def _health_text(h) -> str:
    """A tile's tooltip of the crawl's view of the server, when it is not plain healthy."""
    if h is None or h.state == "healthy":
        return ""
    return f"crawl {h.state} ({h.source}): {h.reason}" + (f" until {h.until:%Y-%m-%d %H:%M:%S %Z}" if h.until else "")


def grid_tiles(
    *,
    status: str = "",
    group: str = "",
    groups: frozenset[str] | None = None,
    limit: int = 300,
    offset: int = 0,
    details: bool = True,
) -> tuple[int, list[Tile]]:
    """One page of servers for the grid, worst status first: (matching servers, tiles). Each tile's
    last check is the server's newest finished StatusCheck (any agent), found through the
    (server, checked_at) index, one probe per tile; its bar and 24 h uptime come from one query each
    for the whole page (details=False: neither, for /metrics). `groups`: only servers in these groups."""
    now = timezone.now()
    qs = _grid_queryset(now)
    if status:
        qs = qs.filter(shown_status=status)
    if group:
        qs = qs.filter(group=group)
    if groups is not None:
        qs = qs.filter(group__in=groups)
    severity = Case(
        *(When(shown_status=s, then=Value(i)) for i, s in enumerate(GRID_STATUSES)), output_field=IntegerField()
    )
    # On a table partitioned by time the newest check is looked for in the partitions of the last
    # LAST_CHECK_WINDOW first (a probe per partition per tile otherwise), then, for the tiles with none
    # there, in every partition.
    floor = check_time_floor(now - LAST_CHECK_WINDOW)
    newest = _newest_check(floor)
    rows = list(
        qs.annotate(severity=severity, last_check_id=newest)
        .order_by("severity", "host", "port", "id")
        .values(
            "id",
            "scheme",
            "host",
            "port",
            "group",
            "crawler_num",
            "enabled",
            "shown_status",
            "last_check_id",
            "monitor__status_since",
            "monitor__last_check_at",
            "monitor__interval_s",
            "monitor__streak",
            "monitor__fail_after",
        )[offset : offset + limit]
    )
    recent_ids = [r["last_check_id"] for r in rows if r["last_check_id"]]
    older_ids = _older_newest_checks(rows) if floor is not None else []
    recent = StatusCheck.objects.filter(id__in=recent_ids)
    queries = [recent.filter(checked_at__gte=floor) if floor is not None else recent]
    if older_ids:
        queries.append(StatusCheck.objects.filter(id__in=older_ids))
    fields = ("id", "checked_at", "category", "latency_ms", "status_code")
    checks = {c["id"]: c for qs in queries for c in qs.values(*fields)}
    monitored = [r["id"] for r in rows if r["shown_status"] != UNMONITORED] if details else []
    bars = tile_bars(server_ids=monitored, now=now)
    uptimes = uptime_counts(server_ids=monitored, now=now)
    certs = tile_certificates(server_ids=[r["id"] for r in rows if r["scheme"] == "https"], now=now)
    health = servers_health_summaries(server_ids=[r["id"] for r in rows], now=now) if details else {}
    server_href = reverse("dashboard:server", args=[0])[: -len("0/")]
    tiles = []
    for r in rows:
        check = checks.get(r["last_check_id"])
        up = uptime_of(uptimes.get(r["id"]))["24h"].up if r["id"] in uptimes else None
        tiles.append(
            Tile(
                id=r["id"],
                origin=Server(scheme=r["scheme"], host=r["host"], port=r["port"]).origin,
                group=r["group"],
                crawler_num=r["crawler_num"],
                enabled=r["enabled"],
                status=r["shown_status"],
                status_since=r["monitor__status_since"],
                last_check_at=check["checked_at"] if check else None,
                last_category=check["category"] if check else "",
                latency_ms=check["latency_ms"] if check and check["status_code"] is not None else None,
                status_code=check["status_code"] if check else None,
                href=f"{server_href}{r['id']}/",
                ago=ago_text(check["checked_at"], now) if check else "never checked",
                note=tile_note(status=r["shown_status"], row=r, now=now),
                uptime_24h=up,
                bar=bars.get(r["id"], []),
                cert_days=certs.get(r["id"], (None, ""))[0],
                cert_error=certs.get(r["id"], (None, ""))[1],
                health=_health_text(health.get(r["id"])),
            )
        )
    return qs.count(), tiles


# --------------------------------------------------------------------------------------------------
# One server (its page makes these reads on every view: hand-written SQL, crawlcore.db.raw)


def server_latency_series(*, server_id: int, range_name: str, now: datetime | None = None) -> dict:
    """The latency chart's data. Labels are ISO times (UTC); the page draws them on a time axis, in the
    operator's zone.

    Over the last hour, each check (the monitor's, when it has any): `series.latency` holds the latency of
    the checks that got an HTTP answer and None for the others (a timeout's "latency" is how long we
    waited, not a response time: drawn as a gap and a failure marker, never as a point on the line);
    `categories` and `kinds` (the failure kind, or "HTTP 503") say what each check was.
    Over longer ranges, the hourly rollups: mean, p95 and max of the answered checks, and `failed`, the
    hour's failed checks, {"disconnect": [...], "error": [...]}."""
    now = now or timezone.now()
    span = RANGES[range_name]
    if range_name == "1h":
        answers = raw.placeholders(SERVER_ANSWERS)
        sql = (
            f"SELECT checked_at, latency_ms, category, status_code, failure_kind FROM {raw.table(StatusCheck)}"
            f" WHERE server_id = %s AND checked_at >= %s AND category IN ({answers}) {{agent}}"
            " ORDER BY checked_at LIMIT 5000"
        )
        params = [server_id, now - span, *SERVER_ANSWERS]
        rows = raw.fetch(sql.format(agent="AND agent = %s"), [*params, Agent.MONITOR.value], datetimes=["checked_at"])
        if not rows:
            rows = raw.fetch(sql.format(agent=""), params, datetimes=["checked_at"])
        return {
            "kind": "checks",
            "labels": [r["checked_at"].isoformat() for r in rows],
            "series": {"latency": [None if r["status_code"] is None else round(r["latency_ms"], 1) for r in rows]},
            "categories": [r["category"] for r in rows],
            "kinds": [_outcome(r) for r in rows],
        }
    rows = raw.fetch_rows(
        f"SELECT {raw.iso_utc('hour')}, latency_mean_ms, latency_p95_ms, latency_max_ms, disconnect, error"
        f" FROM {raw.table(HourlyRollup)} WHERE server_id = %s AND hour > %s ORDER BY hour",
        [server_id, hour_floor(now) - span],
    )
    # A month is 720 points: one pass over plain tuples, the labels already text.
    labels, mean, p95, top, down, err = [], [], [], [], [], []
    for label, m, p, x, d, e in rows:
        labels.append(label)
        mean.append(None if m is None else round(m, 1))
        p95.append(None if p is None else round(p, 1))
        top.append(None if x is None else round(x, 1))
        down.append(d)
        err.append(e)
    return {
        "kind": "rollups",
        "labels": labels,
        "series": {"mean": mean, "p95": p95, "max": top},
        "categories": [],
        "failed": {"disconnect": down, "error": err},
    }


def _outcome(check: dict) -> str:
    """What a check got: "HTTP 200", or the failure kind of one with no answer ("header_timeout")."""
    if check["status_code"] is not None:
        return f"HTTP {check['status_code']}"
    return check["failure_kind"] or "no answer"


_JSON_SCRIPT_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


@dataclass(frozen=True)
class ChartData:
    """A chart's data as JSON text ready for a <script type="application/json"> element (escaped as
    Django's json_script escapes), and what the template needs to know about it."""

    kind: str
    points: int  # checks or hours in the range, answered or not: 0 draws no chart
    json: str


def server_latency_chart(*, server_id: int, range_name: str, now: datetime | None = None) -> ChartData:
    """server_latency_series as JSON. On PostgreSQL the hourly ranges are written as JSON by the database
    itself: a month is 720 points in three series, and rounding and encoding them in Python was a third of
    the server page's cost (bench.dashboard). The values are server_latency_series's, rounded by
    PostgreSQL's numeric rounding (1092.55 → 1092.6 where Python's float gives 1092.5)."""
    now = now or timezone.now()
    if range_name == "1h" or not features.json_aggregates():
        series = server_latency_series(server_id=server_id, range_name=range_name, now=now)
        text = json.dumps(series, separators=(",", ":"))
        # Every check or hour counts, answered or not: a server that only timed out has a chart of failures.
        return ChartData(series["kind"], len(series["labels"]), text.translate(_JSON_SCRIPT_ESCAPES))

    def agg(expr: str) -> str:
        return f"coalesce(json_agg({expr} ORDER BY hour), '[]')::text"

    def rounded(column: str) -> str:
        return f"round({column}::numeric, 1)"

    [(points, labels, mean, p95, top)] = raw.fetch_rows(
        f"SELECT count(latency_mean_ms), {agg(raw.iso_utc('hour'))}, {agg(rounded('latency_mean_ms'))},"
        f" {agg(rounded('latency_p95_ms'))}, {agg(rounded('latency_max_ms'))}"
        f" FROM {raw.table(HourlyRollup)} WHERE server_id = %s AND hour > %s",
        [server_id, hour_floor(now) - RANGES[range_name]],
    )
    text = f'{{"kind":"rollups","labels":{labels},"series":{{"mean":{mean},"p95":{p95},"max":{top}}},"categories":[]}}'
    return ChartData("rollups", points, text.translate(_JSON_SCRIPT_ESCAPES))


def server_recent_checks(*, server_id: int, limit: int = 60) -> list[dict]:
    """The server's newest checks, oldest first (the bar reads left to right): each a dict of the check's
    fields, plus `latency` formatted and `summary`, the line its bar segment shows on hover."""
    sql = (
        "SELECT checked_at, status_code, category, failure_kind, detail, latency_ms, agent, requested_url"
        f" FROM {raw.table(StatusCheck)} WHERE server_id = %s {{since}} ORDER BY checked_at DESC, id DESC LIMIT %s"
    )
    # Partitioned by time: the last LAST_CHECK_WINDOW's partitions first, every partition only when they
    # do not hold `limit` checks of the server.
    floor = check_time_floor(timezone.now() - LAST_CHECK_WINDOW)
    rows = []
    if floor is not None:
        rows = raw.fetch(sql.format(since="AND checked_at >= %s"), [server_id, floor, limit], datetimes=["checked_at"])
    if len(rows) < limit:
        rows = raw.fetch(sql.format(since=""), [server_id, limit], datetimes=["checked_at"])
    rows.reverse()
    for c in rows:  # formatted here once: the page shows each check twice, and template filters cost more
        # A check with no answer has no latency (latency_ms is how long we waited): never "2003 ms".
        c["latency"] = ms(c["latency_ms"]) if c["status_code"] is not None else "no answer"
        outcome = c["failure_kind"] if c["status_code"] is None else c["status_code"]
        c["summary"] = (
            f"{c['checked_at'].isoformat()} · {c['agent']} · {outcome} · {c['latency']} · {c['requested_url']}"
        )
    return rows


def _local(at: datetime) -> str:
    return when_text(at)


def server_timeline_recent(*, server_id: int, limit: int = 100) -> list[dict]:
    """The server's confirmed status changes, newest first: at (formatted), from_status, to_status, reason."""
    rows = raw.fetch(
        f"SELECT at, from_status, to_status, reason FROM {raw.table(StatusChange)}"
        " WHERE server_id = %s ORDER BY at DESC, id DESC LIMIT %s",
        [server_id, limit],
        datetimes=["at"],
    )
    for row in rows:
        row["at"] = _local(row["at"])
    return rows


@dataclass
class ServerHead:
    """What the top of a server's page shows: the server and its monitor row (None: not monitored). What
    the server shows is server_shown_status's, the one rule."""

    server: Server
    monitor: dict | None  # status, status_since, load_profile


def server_head(*, server_id: int) -> ServerHead | None:
    """The server and its monitor, in one query; None when there is no such server."""
    rows = raw.fetch(
        'SELECT s.id, s.scheme, s.host, s.port, s.ip, s."group", s.crawler_num, s.enabled, s.excluded_reason,'
        " m.server_id AS monitored, m.status, m.status_since, s.load_profile"
        f" FROM {raw.table(Server)} s LEFT JOIN {raw.table(ServerMonitor)} m ON m.server_id = s.id"
        " WHERE s.id = %s",
        [server_id],
        datetimes=["status_since"],
        jsons=["load_profile"],
    )
    if not rows:
        return None
    row = rows[0]
    fields = ("id", "scheme", "host", "port", "ip", "group", "crawler_num", "enabled", "excluded_reason")
    server = Server(**{f: row[f] for f in fields})
    server.enabled = bool(server.enabled)  # SQLite: 0/1
    if row["monitored"] is None:
        return ServerHead(server, None)
    return ServerHead(server, {k: row[k] for k in ("status", "status_since", "load_profile")})


def server_figures(*, server_id: int, now: datetime | None = None) -> dict:
    """The server's URLs by state (every state present), failing URLs and failed checks by failure kind,
    uptime per window (monitoring's Uptime), as of `as_of`: from its ServerRollup (beat, every minute)
    while that is younger than SERVER_ROLLUP_MAX_AGE, else counted now (a new server, beat late, the
    embedded mode)."""
    now = now or timezone.now()
    figures = ("url_states", "failing_url_kinds", "check_failure_kinds")
    rows = raw.fetch(
        f"SELECT {', '.join(figures)}, check_days, computed_at FROM {raw.table(ServerRollup)}"
        " WHERE server_id = %s AND computed_at >= %s",
        [server_id, now - timedelta(seconds=SERVER_ROLLUP_MAX_AGE)],
        datetimes=["computed_at"],
        jsons=figures,
    )
    if rows:
        row = rows[0]
    else:
        live = rollups.server_figures_compute(server_ids=[server_id], now=now).get(server_id, {})
        row = {
            "url_states": live.get("url_states", {}),
            "failing_url_kinds": live.get("failing_url_kinds", []),
            "check_failure_kinds": live.get("check_failure_kinds", []),
            "check_days": rollups.CHECK_FAILURE_DAYS,
            "computed_at": now,
        }
    return {
        "url_states": {
            **{s.value: row["url_states"].get(s.value, 0) for s in State},
            **{k: n for k, n in sorted(row["url_states"].items()) if k.startswith(rollups.EXCLUDED_PREFIX)},
        },
        "failing_url_kinds": row["failing_url_kinds"],
        "check_failure_kinds": row["check_failure_kinds"],
        "days": row["check_days"],
        # Uptime is read live, not from the rollup: a failed check must lower it at once (uptime_counts).
        "uptime": uptime_of(uptime_counts(server_ids=[server_id], now=now).get(server_id)),
        "as_of": row["computed_at"],
    }


# --------------------------------------------------------------------------------------------------
# Load heatmap (server x hour of day), from the stored 24-hour load profiles


@dataclass
class HeatRow:
    server_id: int
    origin: str
    cells: list[tuple[float | None, float | None]]  # (mean ms, 0..1 on the heat scale)
    reason: str = ""  # why a row has no cells


def heat_row(server_id: int, origin: str, profile: Sequence[float | None], reason: str = "") -> HeatRow:
    lo, hi = heat_scale()
    span = math.log(hi / lo)

    def fraction(v: float) -> float:
        return min(1.0, max(0.0, math.log(max(v, lo) / lo) / span))

    cells = [(v, None if v is None else fraction(v)) for v in profile]
    return HeatRow(server_id, origin, cells, reason)


NO_PROFILE = "no load history yet: profiles are built hourly from the monitor's answered checks"
NEVER_ANSWERED = "no answered check in the profile's days: a server that never answers has no load"


def load_heatmap(*, group: str = "", groups: frozenset[str] | None = None, limit: int = 200) -> list[HeatRow]:
    """Every monitored server (of the group), with its profile's cells or the reason it has none."""
    qs = Server.objects.filter(monitor__isnull=False, alias_of__isnull=True)
    if group:
        qs = qs.filter(group=group)
    if groups is not None:
        qs = qs.filter(group__in=groups)
    rows = qs.order_by("host", "port").values_list("id", "load_profile", "scheme", "host", "port")[:limit]
    out = []
    for sid, profile, scheme, host, port in rows:
        origin = Server(scheme=scheme, host=host, port=port).origin
        if len(profile or []) != 24:
            out.append(HeatRow(sid, origin, [], NO_PROFILE))
        elif all(v is None for v in profile):
            out.append(HeatRow(sid, origin, [], NEVER_ANSWERED))
        else:
            out.append(heat_row(sid, origin, profile))
    return out


# --------------------------------------------------------------------------------------------------
# The dead-link report (the link reports' record, reports.LinkBreak, summed per site by dashboard.rollups)


def dead_links_figures() -> rollups.Figures:
    return rollups.figures(rollups.DEAD_LINKS, max_age=DEAD_LINKS_MAX_AGE, compute=rollups.dead_links_compute)


def top_page_titles(url_ids: Sequence[int]) -> dict[int, str]:
    return dict(Page.objects.filter(url_id__in=list(url_ids)).values_list("url_id", "title"))


def beat_runs() -> list[BeatJobRun]:
    """Every beat job's last and slowest run (crawlcore.services.beat_runs), the late ones first."""
    rows = list(BeatJobRun.objects.all())
    return sorted(rows, key=lambda r: (not r.late, r.name))
