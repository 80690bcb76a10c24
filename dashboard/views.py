"""The HTTP status dashboard: the server grid, a server's page, the crawl, the dead-link report, the
load heatmap. Read-only; for logged-in users in the "viewer" or "operator" group (or superusers).

Everything scraped (titles, URLs, reasons) reaches the page through Django's autoescaping, and data for
the charts through `json_script`; no template here marks anything safe.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.cache import never_cache

from crawladmin.models import Server
from monitoring.models import ServerMonitor
from monitoring.selectors import server_load_profile, server_status_now, server_uptime
from ranking.selectors import latest_run, top_pages

from . import broker, selectors

DASHBOARD_GROUPS = ("viewer", "operator")
PAGE_SIZE = 300


def may_view(user) -> bool:
    return user.is_active and (user.is_superuser or user.groups.filter(name__in=DASHBOARD_GROUPS).exists())


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


class LoginView(auth_views.LoginView):
    """Any active user may log in here (the admin's login takes staff only); the views decide the rest."""

    template_name = "dashboard/login.html"
    next_page = reverse_lazy("dashboard:grid")
    redirect_authenticated_user = True


def _int(request: HttpRequest, name: str, default: int = 0) -> int:
    raw = request.GET.get(name, "")
    return int(raw) if raw.isdigit() and len(raw) < 10 else default


def _grid_filters(request: HttpRequest) -> tuple[str, str]:
    status = request.GET.get("status", "")
    return (status if status in selectors.GRID_STATUSES else ""), request.GET.get("group", "")[:100]


@dashboard_view
def grid(request: HttpRequest) -> HttpResponse:
    status, group = _grid_filters(request)
    offset = _int(request, "offset")
    total, tiles = selectors.grid_tiles(status=status, group=group, limit=PAGE_SIZE, offset=offset)
    return render(
        request,
        "dashboard/grid.html",
        {
            "tiles": tiles,
            "total": total,
            "status": status,
            "group": group,
            "groups": selectors.grid_groups(),
            "statuses": selectors.GRID_STATUSES,
            "counts": selectors.monitor_status_counts(),
            "offset": offset,
            "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None,
            "prev_offset": max(offset - PAGE_SIZE, 0) if offset else None,
            "refresh_seconds": 30,
        },
    )


@dashboard_view
def grid_json(request: HttpRequest) -> JsonResponse:
    """What the grid's script polls: the same page of tiles, as data."""
    status, group = _grid_filters(request)
    total, tiles = selectors.grid_tiles(status=status, group=group, limit=PAGE_SIZE, offset=_int(request, "offset"))
    return JsonResponse(
        {
            "generated_at": timezone.now().isoformat(),
            "total": total,
            "counts": selectors.monitor_status_counts(),
            "tiles": [t.as_json() for t in tiles],
        }
    )


@dashboard_view
def server(request: HttpRequest, server_id: int) -> HttpResponse:
    srv = get_object_or_404(Server, pk=server_id)
    range_name = request.GET.get("range", "24h")
    if range_name not in selectors.RANGES:
        range_name = "24h"
    monitor = ServerMonitor.objects.filter(server_id=server_id).first()
    profile = (monitor.load_profile if monitor else None) or server_load_profile(server_id=server_id)
    checks = selectors.server_recent_checks(server_id=server_id)
    return render(
        request,
        "dashboard/server.html",
        {
            "server": srv,
            "monitor": monitor,
            "status": server_status_now(server_id=server_id) if monitor else selectors.UNMONITORED,
            "range": range_name,
            "ranges": list(selectors.RANGES),
            "series": selectors.server_latency_series(server_id=server_id, range_name=range_name),
            "checks": checks,
            "latest_checks": list(reversed(checks[-20:])),
            "uptime": server_uptime(server_id=server_id),
            "timeline": selectors.server_timeline_recent(server_id=server_id),
            "failures": selectors.server_failure_kinds(server_id=server_id),
            "url_states": selectors.server_url_states(server_id=server_id),
            "heat": selectors.heat_row(server_id, srv.origin, profile) if any(v is not None for v in profile) else None,
            "hours": range(24),
        },
    )


@dashboard_view
def crawl(request: HttpRequest) -> HttpResponse:
    top = top_pages(limit=20)
    titles = selectors.Page.objects.filter(url_id__in=[p["url_id"] for p in top]).values_list("url_id", "title")
    titles = dict(titles)
    for p in top:
        p["title"] = titles.get(p["url_id"], "")
    return render(
        request,
        "dashboard/crawl.html",
        {
            "urls": selectors.url_state_counts(),
            "rate_1m": selectors.check_rates(seconds=60),
            "rate_5m": selectors.check_rates(seconds=300),
            "queues": broker.queue_lengths(),
            "broker_is_redis": broker.broker_is_redis(),
            "workers": broker.workers_online(),
            "top": top,
            "rank_run": latest_run(),
        },
    )


@dashboard_view
def dead_links(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/dead_links.html", {"sites": selectors.dead_link_sites()})


@dashboard_view
def dead_links_site(request: HttpRequest, server_id: int) -> HttpResponse:
    srv = get_object_or_404(Server, pk=server_id)
    links = selectors.dead_links_of(server_id=server_id)
    return render(request, "dashboard/dead_links_site.html", {"server": srv, "links": links})


@dashboard_view
def heatmap(request: HttpRequest) -> HttpResponse:
    group = request.GET.get("group", "")[:100]
    return render(
        request,
        "dashboard/heatmap.html",
        {
            "rows": selectors.load_heatmap(group=group),
            "group": group,
            "groups": selectors.grid_groups(),
            "hours": range(24),
        },
    )
