"""A server's page: its status, latency chart, recent checks, timeline, figures and what the crawl, the
alerts and the jobs hold about it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from alerts.selectors import server_mutes, server_notifications
from alerts.views import MUTE_CHOICES
from crawlcore.access import server_groups_of
from crawlcore.selectors_health import server_health_history, server_health_summary
from crawlcore.selectors_jobs import jobs_of_server
from monitoring.selectors import monitor_kind_details, server_certificate, server_load_profile
from monitoring.services.monitors import ping_url

from . import selectors_server
from .bulk import may_operate
from .charts import ChartData
from .selectors_grid import server_shown_status
from .selectors_heatmap import heat_row
from .view_access import dashboard_view, visible_server

DEFAULT_RANGE = "24h"


def _chart(server_id: int, asked: str) -> tuple[str, ChartData]:
    """The latency chart of the range asked for (`?range=`), else of DEFAULT_RANGE or, for a server monitored
    for less than two hours (one hourly point at most), of its last hour check by check, which says more."""
    if asked in selectors_server.RANGES:
        return asked, selectors_server.server_latency_chart(server_id=server_id, range_name=asked)
    chart = selectors_server.server_latency_chart(server_id=server_id, range_name=DEFAULT_RANGE)
    if chart.points < 2:
        recent = selectors_server.server_latency_chart(server_id=server_id, range_name="1h")
        if recent.points and recent.points >= chart.points:
            return "1h", recent
    return DEFAULT_RANGE, chart


@dashboard_view
def server(request: HttpRequest, server_id: int) -> HttpResponse:
    head = selectors_server.server_head(server_id=server_id)
    if head is None:
        raise Http404("no such server")
    visible_server(request, head.server)
    range_name, chart = _chart(server_id, request.GET.get("range", ""))
    srv, monitor = head.server, head.monitor
    profile = (monitor["load_profile"] if monitor else None) or server_load_profile(server_id=server_id)
    kind = monitor_kind_details(server_id=server_id)
    timed = kind is None or kind["kind"] != "heartbeat"
    checks = selectors_server.server_recent_checks(server_id=server_id, timed=timed, monitored=monitor is not None)
    figures = selectors_server.server_figures(server_id=server_id)
    status, note = server_shown_status(server_id=server_id)
    return render(
        request,
        "dashboard/server.html",
        {
            "server": srv,
            "monitor": monitor,
            "kind": kind,
            "name": kind["name"] if kind else srv.origin,
            "crawled": kind["crawled"] if kind else True,
            "timed": timed,
            # The token lets anyone ping: the URL is for those who set jobs up (operators), not every viewer.
            "ping_url": ping_url(kind["token"]) if kind and kind.get("token") and may_operate(request.user) else "",
            "status": status,
            "note": note,
            "range": range_name,
            "ranges": list(selectors_server.RANGES),
            "chart": chart,
            "checks": checks,
            "latest_checks": list(reversed(checks[-20:])),
            "uptime": figures["uptime"],
            "timeline": selectors_server.server_timeline_recent(server_id=server_id),
            "figures": figures,
            "heat": heat_row(server_id, srv.origin, profile) if any(v is not None for v in profile) else None,
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
