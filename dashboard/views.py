"""The HTTP status dashboard: the server grid, a server's page, the crawl, the dead-link report, the
load heatmap. Read-only; for logged-in users in the "viewer" or "operator" group (or superusers). A reader
limited to server groups (crawlcore.access) sees only their servers, and not the crawl page, which is about
every server.

Every page answers in a few milliseconds of work at a million URLs (bench/DASHBOARD.md): counts come
from the rollups (dashboard.rollups, each page says "as of" when), and what every viewer sees alike (the
grid's tiles, the heatmap, the dead-link table) is rendered once and kept a few seconds per process.

Everything scraped (titles, URLs, reasons) reaches the page through Django's autoescaping or, in the
tags that build long tables in Python, through format_html, which escapes the same way; data for the
charts goes through `json_script`. The only markup marked safe unescaped is the heatmap's cells, which
hold numbers formatted in dashboard_tags.heat_cells.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.cache import never_cache

from alerts.selectors import server_mutes, server_notifications
from alerts.views import MUTE_CHOICES
from crawlcore.access import READER_GROUPS, may_read, sees_server_group, server_groups_of
from crawlcore.models import Server
from crawlcore.selectors import urls_orphaned, urls_orphaned_count
from crawlcore.selectors_health import server_health_history, server_health_summary
from crawlcore.selectors_jobs import jobs_of_server, jobs_states
from monitoring.report import COLUMNS as UPTIME_COLUMNS
from monitoring.report import FORMATS as UPTIME_FORMATS
from monitoring.report import MAINTENANCE_NOTE, ReportError, report_write, uptime_report
from monitoring.selectors import server_certificate, server_load_profile
from ranking.selectors import latest_run, top_pages
from reports.export import FORMATS, dead_links_export
from reports.selectors import link_breaks_count, link_breaks_first, link_breaks_of_site
from search.selectors import Filters, SearchError, search_pages

from . import broker, cache, selectors
from .cache import cached

DASHBOARD_GROUPS = READER_GROUPS
PAGE_SIZE = 300
HEATMAP_TTL = 60.0
PRIORITY_TTL = 60.0  # the priority table follows the hourly load profiles: a minute is fresh enough
DEFAULT_RANGE = "24h"


def may_view(user) -> bool:
    return may_read(user)


def dashboard_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Logged in (else to the dashboard's login page), and a viewer, an operator or a superuser (else 403)."""

    @login_required(login_url=reverse_lazy("dashboard:login"))
    @never_cache
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not may_view(request.user):
            raise PermissionDenied("the dashboard is for the viewer and operator groups")
        return view(request, *args, **kwargs)

    return wrapped


def whole_crawl_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A dashboard page about every server: not for a reader limited to server groups."""

    @dashboard_view
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if server_groups_of(request.user) is not None:
            raise PermissionDenied("this page covers every server; your account is limited to server groups")
        return view(request, *args, **kwargs)

    return wrapped


def _scope(request: HttpRequest, group: str = "") -> frozenset[str] | None:
    """The reader's server groups (None: all), after checking that a group asked for is one of them:
    another group's name gets the same 404 as a group that does not exist."""
    scope = server_groups_of(request.user)
    if scope is not None and group and group not in scope:
        raise Http404("no such group")
    return scope


def _visible_groups(scope: frozenset[str] | None) -> list[str]:
    return [g for g in selectors.grid_groups() if scope is None or g in scope]


def _visible_server(request: HttpRequest, server: Server) -> None:
    if not sees_server_group(request.user, server.group):
        raise Http404("no such server")


class LoginView(auth_views.LoginView):
    """Any active user may log in here (the admin's login takes staff only); the views decide the rest."""

    template_name = "registration/login.html"
    next_page = reverse_lazy("dashboard:grid")
    redirect_authenticated_user = True


def _int(request: HttpRequest, name: str, default: int = 0) -> int:
    """`?name=` as a whole number below a billion; a value that is not one is a bad request (400)."""
    raw = request.GET.get(name, "")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) < 10):  # isdigit() alone takes '²'
        raise BadRequest(f"{name} must be a whole number below 1000000000")
    return int(raw)


def _grid_filters(request: HttpRequest) -> tuple[str, str, frozenset[str] | None]:
    status = request.GET.get("status", "")
    group = request.GET.get("group", "")[:100]
    return (status if status in selectors.GRID_STATUSES else ""), group, _scope(request, group)


def _shared_key(status: str, group: str, offset: int, scope: frozenset[str] | None) -> str | None:
    """The cache key of a grid page every viewer with this scope sees alike; None (not cached) for a group
    or offset no grid link leads to, so requests cannot fill the cache with made-up keys. Scopes are the
    admin's groups, so there are few of them."""
    if (group and group not in selectors.grid_groups()) or offset % PAGE_SIZE:
        return None
    return json.dumps([status, group, offset, None if scope is None else sorted(scope)])


def _grid_page(status: str, group: str, offset: int, scope: frozenset[str] | None) -> dict:
    """One page of the grid, its tiles rendered: the same for every viewer (of one scope), so kept
    SHARED_VIEW_TTL seconds per process (twenty open grids refreshing cost one query round and one render
    per process)."""

    def compute() -> dict:
        now = timezone.now()
        total, tiles = selectors.grid_tiles(status=status, group=group, groups=scope, limit=PAGE_SIZE, offset=offset)
        return {
            "as_of": now,
            "total": total,
            "counts": selectors.monitor_status_counts(groups=scope),
            "tiles": tiles,
            "html": render_to_string("dashboard/_tiles.html", {"tiles": tiles}),
        }

    key = _shared_key(status, group, offset, scope)
    return compute() if key is None else cached(f"grid:{key}", selectors.SHARED_VIEW_TTL, compute)


@dashboard_view
def grid(request: HttpRequest) -> HttpResponse:
    status, group, scope = _grid_filters(request)
    offset = _int(request, "offset")
    page = _grid_page(status, group, offset, scope)
    total = page["total"]
    return render(
        request,
        "dashboard/grid.html",
        {
            "tiles_html": page["html"],
            "as_of": page["as_of"],
            "total": total,
            "status": status,
            "group": group,
            "groups": _visible_groups(scope),
            "statuses": selectors.GRID_STATUSES,
            "counts": page["counts"],
            "offset": offset,
            "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None,
            "prev_offset": max(offset - PAGE_SIZE, 0) if offset else None,
            "refresh_seconds": selectors.grid_refresh_seconds(),
        },
    )


@dashboard_view
def grid_json(request: HttpRequest) -> HttpResponse:
    """What the grid's script polls: the same page of tiles, as data (`generated_at`: as of when)."""
    status, group, scope = _grid_filters(request)
    offset = _int(request, "offset")

    def compute() -> bytes:
        page = _grid_page(status, group, offset, scope)
        return json.dumps(
            {
                "generated_at": page["as_of"].isoformat(),
                "total": page["total"],
                "counts": page["counts"],
                "tiles": [t.as_json() for t in page["tiles"]],
            }
        ).encode()

    key = _shared_key(status, group, offset, scope)
    body = compute() if key is None else cached(f"grid.json:{key}", selectors.SHARED_VIEW_TTL, compute)
    return HttpResponse(body, content_type="application/json")


@dashboard_view
def server(request: HttpRequest, server_id: int) -> HttpResponse:
    head = selectors.server_head(server_id=server_id)
    if head is None:
        raise Http404("no such server")
    _visible_server(request, head.server)
    range_name = request.GET.get("range", "")
    asked = range_name in selectors.RANGES
    if not asked:
        range_name = DEFAULT_RANGE
    chart = selectors.server_latency_chart(server_id=server_id, range_name=range_name)
    if not asked and chart.points < 2:
        # Monitored for less than two hours: one hourly point at most. Its last hour, check by check,
        # says more (a range asked for is shown as asked).
        recent = selectors.server_latency_chart(server_id=server_id, range_name="1h")
        if recent.points and recent.points >= chart.points:
            range_name, chart = "1h", recent
    srv, monitor = head.server, head.monitor
    profile = (monitor["load_profile"] if monitor else None) or server_load_profile(server_id=server_id)
    checks = selectors.server_recent_checks(server_id=server_id)
    figures = selectors.server_figures(server_id=server_id)
    status, note = selectors.server_shown_status(server_id=server_id)
    return render(
        request,
        "dashboard/server.html",
        {
            "server": srv,
            "monitor": monitor,
            "status": status,
            "note": note,
            "range": range_name,
            "ranges": list(selectors.RANGES),
            "chart": chart,
            "checks": checks,
            "latest_checks": list(reversed(checks[-20:])),
            "uptime": figures["uptime"],
            "timeline": selectors.server_timeline_recent(server_id=server_id),
            "figures": figures,
            "heat": selectors.heat_row(server_id, srv.origin, profile) if any(v is not None for v in profile) else None,
            "hours": range(24),
            "notifications": server_notifications(server_id=server_id),
            "certificate": server_certificate(server_id=server_id),
            "mutes": server_mutes(server_id=server_id, group=srv.group, now=timezone.now()),
            "mute_choices": list(MUTE_CHOICES),
            "health": server_health_summary(server_id=server_id),
            "health_history": server_health_history(server_id=server_id, limit=10),
            "jobs": jobs_of_server(server=srv, groups=server_groups_of(request.user)),
        },
    )


def _priority_table() -> dict:
    """The scheduler's priority table and its rendering (240 linked cells): the same for every viewer and
    built from the hourly load profiles, so kept PRIORITY_TTL seconds per process."""

    def compute() -> dict:
        data = selectors.crawl_priority()
        html = render_to_string("dashboard/_priority.html", {"priority": data, "hours": range(24)})
        return {"data": data, "html": html}

    return cached("crawl_priority", PRIORITY_TTL, compute)


@whole_crawl_view
def crawl(request: HttpRequest) -> HttpResponse:
    priority = _priority_table()
    top = top_pages(limit=20)
    titles = selectors.top_page_titles([p["url_id"] for p in top])
    for p in top:
        p["title"] = titles.get(p["url_id"], "")
    return render(
        request,
        "dashboard/crawl.html",
        {
            "urls": selectors.url_state_counts(),
            "history": selectors.crawl_history(),
            "priority": priority["data"],
            "priority_html": priority["html"],
            "max_age": int(selectors.PAGE_COUNTS_MAX_AGE),
            "rate_1m": selectors.check_rates(seconds=60),
            "rate_5m": selectors.check_rates(seconds=300),
            "queues": broker.queue_lengths(),
            "broker_is_redis": broker.broker_is_redis(),
            "workers": broker.workers_online(),
            "top": top,
            "rank_run": latest_run(),
            "beat_runs": selectors.beat_runs(),
            "jobs": jobs_states(),
        },
    )


@dashboard_view
def dead_links(request: HttpRequest) -> HttpResponse:
    report = selectors.dead_links_figures()
    scope = _scope(request)
    if scope is not None:
        # The reader's sites only: rendered for this request (the shared table below holds every site).
        sites = report.data["sites"]
        mine = set(
            Server.objects.filter(id__in=[s["server_id"] for s in sites], group__in=scope).values_list("id", flat=True)
        )
        shown = [s for s in sites if s["server_id"] in mine]
        table = render_to_string("dashboard/_dead_link_sites.html", {"sites": shown})
        return render(request, "dashboard/dead_links.html", {"table": table, "as_of": report.computed_at})
    # The table (up to a thousand sites) is rendered once per report and process: it changes only when
    # the report is recomputed (every five minutes).
    hit = cache.recent("dead_links_table", 3600.0)
    if hit is not None and hit[0] == report.computed_at:
        table = hit[1]
    else:
        table = render_to_string("dashboard/_dead_link_sites.html", {"sites": report.data["sites"]})
        cache.remember("dead_links_table", (report.computed_at, table))
    return render(request, "dashboard/dead_links.html", {"table": table, "as_of": report.computed_at})


def _after(request: HttpRequest) -> tuple[int, int] | None:
    """`?after=<page id>-<target id>`: where the previous page of a site's dead links ended."""
    raw = request.GET.get("after", "")
    if not raw:
        return None
    first, _, second = raw.partition("-")
    if all(part.isascii() and part.isdigit() and len(part) < 19 for part in (first, second)):
        return int(first), int(second)
    raise BadRequest("after must be <page id>-<target id>")


ORPHANS_SHOWN = 50


@dashboard_view
def dead_links_site(request: HttpRequest, server_id: int) -> HttpResponse:
    srv = get_object_or_404(Server, pk=server_id)
    _visible_server(request, srv)
    after = _after(request)
    as_of = selectors.dead_links_figures().computed_at  # refreshes the record when it is stale, as beat does
    links = link_breaks_of_site(server_id=server_id, after=after, limit=selectors.DEAD_LINKS_PAGE + 1)
    more = len(links) > selectors.DEAD_LINKS_PAGE
    links = links[: selectors.DEAD_LINKS_PAGE]
    last = links[-1] if links else None
    return render(
        request,
        "dashboard/dead_links_site.html",
        {
            "server": srv,
            "links": links,
            "total": link_breaks_count(server_id=server_id),
            "as_of": as_of,
            "first_page": after is None,
            "next_after": f"{last['from_url_id']}-{last['to_url_id']}" if more and last else None,
            # The broken links on the pages most reached (summed page rank), on the first page of the report.
            "fix_first": link_breaks_first(server_id=server_id) if after is None else [],
            # Pages only the server's sitemaps lead to: on the first page of the report.
            "orphans": urls_orphaned(server_id=server_id, limit=ORPHANS_SHOWN) if after is None else [],
            "orphan_count": urls_orphaned_count(server_id=server_id) if after is None else 0,
        },
    )


@dashboard_view
def dead_links_download(request: HttpRequest, fmt: str, server_id: int | None = None) -> StreamingHttpResponse:
    """The broken links as `manage.py dead_links` writes them (the same streaming code), of one site or of
    every site the reader may see, as recorded by the last refresh (beat, every five minutes)."""
    if fmt not in FORMATS:
        raise Http404("csv or json")
    name, groups = "dead-links", _scope(request)
    if server_id is not None:
        srv = get_object_or_404(Server, pk=server_id)
        _visible_server(request, srv)
        name = f"dead-links-{srv.host}"
    response = StreamingHttpResponse(
        dead_links_export(fmt=fmt, server_id=server_id, groups=groups),
        content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/json",
    )
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


def _heatmap_table(group: str, scope: frozenset[str] | None) -> dict:
    """The heatmap's rows, rendered (4,800 cells for 200 servers): the same for every viewer (of one
    scope) and built from profiles beat rebuilds hourly, so kept a minute per process."""

    def compute() -> dict:
        rows = selectors.load_heatmap(group=group, groups=scope)
        html = render_to_string("dashboard/_heatmap_rows.html", {"rows": rows})
        return {"html": html, "as_of": timezone.now(), "n": len(rows)}

    if group and group not in selectors.grid_groups():
        return compute()
    return cached(f"heatmap:{json.dumps([group, None if scope is None else sorted(scope)])}", HEATMAP_TTL, compute)


@dashboard_view
def heatmap(request: HttpRequest) -> HttpResponse:
    group = request.GET.get("group", "")[:100]
    scope = _scope(request, group)
    table = _heatmap_table(group, scope)
    return render(
        request,
        "dashboard/heatmap.html",
        {
            "rows_html": table["html"],
            "n_rows": table["n"],
            "as_of": table["as_of"],
            "group": group,
            "groups": _visible_groups(scope),
            "hours": range(24),
        },
    )


def _uptime_report(request: HttpRequest):
    """The month's report of the servers the reader may see (`?month=YYYY-MM`, `?group=`)."""
    group = request.GET.get("group", "")[:100]
    scope = _scope(request, group)
    try:
        report = uptime_report(month=request.GET.get("month") or None, group=group or None, groups=scope)
    except ReportError as exc:
        raise BadRequest(str(exc)) from None
    return report, group, scope


@dashboard_view
def uptime(request: HttpRequest) -> HttpResponse:
    report, group, scope = _uptime_report(request)
    query = urlencode({"month": report.month, **({"group": group} if group else {})})
    rows = [[_uptime_cell(row[c]) for c in UPTIME_COLUMNS] for row in report.rows]
    context = {
        "report": report, "rows": rows, "columns": UPTIME_COLUMNS, "group": group, "groups": _visible_groups(scope),
        "note": MAINTENANCE_NOTE, "query": query,
    }  # fmt: skip
    return render(request, "dashboard/uptime.html", context)


def _uptime_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


@dashboard_view
def uptime_download(request: HttpRequest, fmt: str) -> HttpResponse:
    """The same report as `manage.py uptime_report --format csv|json` writes it."""
    if fmt not in UPTIME_FORMATS:
        raise Http404("csv or json")
    report, group, _ = _uptime_report(request)
    response = HttpResponse(
        report_write(report, fmt), content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    )
    suffix = f"-{group}" if group and group.replace("-", "").replace("_", "").isalnum() else ""
    response["Content-Disposition"] = f'attachment; filename="uptime-{report.month}{suffix}.{fmt}"'
    return response


SEARCH_PAGE = 20


@dashboard_view
def search(request: HttpRequest) -> HttpResponse:
    """Search the stored pages (search.selectors): the reader's server groups only. Titles and URLs are
    autoescaped; a snippet is HTML built by crawler.fulltext.snippet (the page's text escaped, the matched
    words in <mark>), the one piece of scraped text the template takes as it is."""
    query = request.GET.get("q", "").strip()[:500]
    group = request.GET.get("group", "")
    kind = request.GET.get("type", "")
    if kind not in ("", "html", "pdf"):
        raise BadRequest("type must be html or pdf")
    offset = _int(request, "offset")
    filters = Filters(site=request.GET.get("site", "").strip()[:300], group=group, content_type=kind,
                      groups=_scope(request, group))  # fmt: skip
    hits, error = [], ""
    if query:
        try:
            hits = search_pages(query=query, filters=filters, limit=SEARCH_PAGE + 1, offset=offset)
        except SearchError as exc:
            error = str(exc)
    more = len(hits) > SEARCH_PAGE
    return render(
        request,
        "dashboard/search.html",
        {
            "query": query, "site": filters.site, "group": group, "type": kind, "hits": hits[:SEARCH_PAGE],
            "error": error, "offset": offset, "next_offset": offset + SEARCH_PAGE if more else None,
            "groups": _visible_groups(filters.groups),
        },
    )  # fmt: skip
