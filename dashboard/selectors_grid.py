"""Reads for the server grid and list (and the tiles that the status pages and /metrics reuse): which
servers match, in the grid's order, and one page of them as tiles.

Each tile's last check is found through the (server, checked_at) index, one probe per tile; its bar, 24 h
uptime, certificate and the crawl's view of the server come from one query each for the whole page. What
a server shows is monitoring.selectors.servers_shown's, the one rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery
from django.urls import reverse
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from crawlcore.selectors import check_time_floor
from crawlcore.selectors_health import servers_health_summaries
from crawlcore.templatetags.times import ago_text, when_text
from crawler.lifecycle import Agent
from crawler.status import Category, Status
from crawler.urlnorm import ServerKey
from monitoring.kinds import CRAWLED_SCHEMES, SCHEMES, Kind, kind_of_scheme, shown_name
from monitoring.models import ServerCertificate
from monitoring.selectors import monitor_intervals, servers_shown, uptime_counts, uptime_of

from . import rollups
from .cache import cached
from .formats import ms
from .ordering import natural_key

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

SHARED_VIEW_TTL = 5.0  # what every viewer sees alike (grid tiles, counts by status)


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


TIMED = (Category.NORMAL.value, Category.DELAY.value)  # checks that passed: their time is a latency
TILE_BAR = 30  # the tile's bar: the server's last checks by the monitor


@dataclass
class Tile:
    id: int
    origin: str
    group: str
    name: str  # monitoring.kinds.shown_name: what people called it, else its target as they write it
    kind: str
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
    named: bool = False  # people gave it a name (else `name` is its target)
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
        return "–" if self.uptime_24h is None else f"{self.uptime_24h:.2f}\u00a0%"

    @property
    def kind_text(self) -> str:
        return KIND_TEXT.get(self.kind, self.kind)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
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


KIND_TEXT = {"http": "HTTP", "tcp": "TCP", "dns": "DNS", "heartbeat": "heartbeat"}
GRID_KINDS = tuple(KIND_TEXT)
MAX_QUERY = 100


@dataclass(frozen=True)
class GridFilter:
    """What a grid or list page shows: by status, group, kind and a search in names and addresses."""

    status: str = ""
    group: str = ""
    kind: str = ""
    q: str = ""
    groups: frozenset[str] | None = None  # the reader's scope (None: every group)
    by_group: bool = False  # ordered by group first (the list's collapsible groups)


def _kind_q(kind: str) -> Q:
    if kind == "http":
        return Q(scheme__in=CRAWLED_SCHEMES)
    return Q(scheme=SCHEMES[Kind(kind)])


def grid_rows(*, filters: GridFilter, now: datetime) -> list[dict]:
    """Every matching server's light row, in the grid's order: problems first (GRID_STATUSES' order), then
    by name as people sort names (dashboard.ordering). One query of small rows; at thousands of servers
    sorting them here costs less than a page's details, which grid_tiles reads for one page only."""
    qs = _grid_queryset(now)
    if filters.status:
        qs = qs.filter(shown_status=filters.status)
    if filters.group:
        qs = qs.filter(group=filters.group)
    if filters.groups is not None:
        qs = qs.filter(group__in=filters.groups)
    if filters.kind in GRID_KINDS:
        qs = qs.filter(_kind_q(filters.kind))
    if filters.q:
        qs = qs.filter(Q(host__icontains=filters.q) | Q(monitor__name__icontains=filters.q))
    rows = list(qs.values("id", "scheme", "host", "port", "group", "shown_status", "monitor__name"))
    severity = {s: i for i, s in enumerate(GRID_STATUSES)}
    for r in rows:
        # The server's origin as Server.origin writes it, without building a model per row (thousands).
        origin = ServerKey(r["scheme"], r["host"], r["port"]).origin()
        r["name"] = shown_name(
            name=r["monitor__name"] or "", scheme=r["scheme"], host=r["host"], port=r["port"], origin=origin
        )
        r["origin"] = origin
        r["sort"] = (severity.get(r["shown_status"], len(severity)), natural_key(r["name"]), r["port"], r["id"])
    if filters.by_group:
        rows.sort(key=lambda r: (natural_key(r["group"]), r["sort"]))
    else:
        rows.sort(key=lambda r: r["sort"])
    return rows


@dataclass(frozen=True)
class GroupCount:
    name: str
    servers: int
    problems: int  # servers whose status is a problem (down, unconfirmed, slow, stale)


PROBLEMS = frozenset(GRID_STATUSES[:5])


def grid_group_counts(rows: Sequence[dict]) -> dict[str, GroupCount]:
    """Servers and problems per group of grid_rows' rows (every match, not one page)."""
    servers: Counter = Counter()
    problems: Counter = Counter()
    for r in rows:
        servers[r["group"]] += 1
        problems[r["group"]] += r["shown_status"] in PROBLEMS
    return {g: GroupCount(g, n, problems[g]) for g, n in servers.items()}


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
    filters: GridFilter | None = None,
) -> tuple[int, list[Tile]]:
    """One page of servers for the grid or the list, worst status first, then by name as people sort
    them: (matching servers, tiles). Each tile's last check is the server's newest finished StatusCheck
    (any agent), found through the (server, checked_at) index, one probe per tile; its bar and 24 h uptime
    come from one query each for the whole page (details=False: neither, for /metrics). `groups`: only
    servers in these groups. `filters` (GridFilter) replaces status, group and groups when given."""
    now = timezone.now()
    filters = filters or GridFilter(status=status, group=group, groups=groups)
    ordered = grid_rows(filters=filters, now=now)
    return len(ordered), _tiles_of(ordered[offset : offset + limit], now, details)


def grid_page(*, filters: GridFilter, limit: int, offset: int) -> tuple[int, list[Tile], dict[str, GroupCount]]:
    """grid_tiles with the counts per group of every matching server (the list's group headings)."""
    now = timezone.now()
    ordered = grid_rows(filters=filters, now=now)
    return len(ordered), _tiles_of(ordered[offset : offset + limit], now, True), grid_group_counts(ordered)


_TILE_FIELDS = (
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
)
_CHECK_FIELDS = ("id", "checked_at", "category", "latency_ms", "status_code")


@dataclass(frozen=True)
class _PageDetails:
    """What a page of tiles reads in one query each for the whole page, by server id."""

    bars: dict[int, list[str]]
    uptimes: dict
    certs: dict[int, tuple[float | None, str]]
    health: dict


def _tiles_of(page: list[dict], now: datetime, details: bool) -> list[Tile]:
    """The tiles of one page of grid_rows' rows: their rows with the newest check's id, those checks, then
    the page's details, then one Tile per row."""
    # On a table partitioned by time the newest check is looked for in the partitions of the last
    # LAST_CHECK_WINDOW first (a probe per partition per tile otherwise), then, for the tiles with none
    # there, in every partition.
    floor = check_time_floor(now - LAST_CHECK_WINDOW)
    rows = _tile_rows(page, now, floor)
    checks = _tile_checks(rows, floor)
    extra = _page_details(rows, now, details)
    server_href = reverse("dashboard:server", args=[0])[: -len("0/")]
    return [_tile(r, checks.get(r["last_check_id"]), extra, href=f"{server_href}{r['id']}/", now=now) for r in rows]


def _tile_rows(page: list[dict], now: datetime, floor: datetime | None) -> list[dict]:
    """The page's servers (in its order) with what their tiles show and `last_check_id`, the newest
    finished check at or after `floor`; the light row's name and origin kept."""
    light = {r["id"]: r for r in page}
    found = {
        r["id"]: r
        for r in _grid_queryset(now)
        .filter(id__in=list(light))
        .annotate(last_check_id=_newest_check(floor))
        .values(*_TILE_FIELDS)
    }
    kept = ("name", "origin", "monitor__name")
    return [{**found[sid], **{k: light[sid][k] for k in kept}} for sid in light if sid in found]


def _tile_checks(rows: list[dict], floor: datetime | None) -> dict[int, dict]:
    """The rows' newest checks by id: those since `floor` (only its partitions read), then, for the rows
    with none there, their newest from any time (set on the row)."""
    recent_ids = [r["last_check_id"] for r in rows if r["last_check_id"]]
    older_ids = _older_newest_checks(rows) if floor is not None else []
    recent = StatusCheck.objects.filter(id__in=recent_ids)
    queries = [recent.filter(checked_at__gte=floor) if floor is not None else recent]
    if older_ids:
        queries.append(StatusCheck.objects.filter(id__in=older_ids))
    return {c["id"]: c for qs in queries for c in qs.values(*_CHECK_FIELDS)}


def _page_details(rows: list[dict], now: datetime, details: bool) -> _PageDetails:
    """Bars, uptimes and the crawl's view (details=False: none of them) and certificates of the page."""
    monitored = [r["id"] for r in rows if r["shown_status"] != UNMONITORED] if details else []
    return _PageDetails(
        bars=tile_bars(server_ids=monitored, now=now),
        uptimes=uptime_counts(server_ids=monitored, now=now),
        certs=tile_certificates(server_ids=[r["id"] for r in rows if r["scheme"] == "https"], now=now),
        health=servers_health_summaries(server_ids=[r["id"] for r in rows], now=now) if details else {},
    )


def _tile_latency(check: dict | None, kind: str) -> float | None:
    """The check's time when it is a latency. HTTP: any answer's time (a 503 took 42 ms); TCP and DNS: a
    connect or a lookup that succeeded; a heartbeat: never."""
    if not check or check["latency_ms"] is None or kind == "heartbeat":
        return None
    timed = check["status_code"] is not None if kind == "http" else check["category"] in TIMED
    return check["latency_ms"] if timed else None


def _tile(r: dict, check: dict | None, extra: _PageDetails, *, href: str, now: datetime) -> Tile:
    sid = r["id"]
    kind = kind_of_scheme(r["scheme"]).value
    cert_days, cert_error = extra.certs.get(sid, (None, ""))
    return Tile(
        id=sid,
        origin=r["origin"],
        group=r["group"],
        name=r["name"],
        named=bool(r["monitor__name"]),
        kind=kind,
        crawler_num=r["crawler_num"],
        enabled=r["enabled"],
        status=r["shown_status"],
        status_since=r["monitor__status_since"],
        last_check_at=check["checked_at"] if check else None,
        last_category=check["category"] if check else "",
        latency_ms=_tile_latency(check, kind),
        status_code=check["status_code"] if check else None,
        href=href,
        ago=ago_text(check["checked_at"], now) if check else "never checked",
        note=tile_note(status=r["shown_status"], row=r, now=now),
        uptime_24h=uptime_of(extra.uptimes.get(sid))["24h"].up if sid in extra.uptimes else None,
        bar=extra.bars.get(sid, []),
        cert_days=cert_days,
        cert_error=cert_error,
        health=_health_text(extra.health.get(sid)),
    )
