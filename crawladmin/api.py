"""The read-only JSON API, and the health check the compose file probes.

- `GET /api/summary`: URL counts by state, exclusions, check counts by category, servers, progress. The
  counts other than the checks' are shared by every client for a few seconds (`as_of`: when counted),
  so a thousand pollers cost one count; the check counts are exact (a rollup plus the newest rows).
- `GET /api/servers`: the servers, with their monitor and what each shows (the grid's status) where
  they are monitored.
- `GET /healthz`: no authentication; 200 when the database answers, 503 when it does not.

The API answers a logged-in Django session of a reader (a superuser, or a user in the viewer or operator
group: crawlcore.access), `Authorization: Bearer <token>` with a user's token (the REST API's, /api/v1/:
the user's roles and groups), or the shared `CRAWLADMIN_API_TOKEN` (unset: off). The REST API /api/v1/
covers all of this and more (its index: /api/v1/). A reader limited to server groups gets only their servers from
`/api/servers`, and neither `/api/summary` nor `/metrics`, which count the whole crawl. A request that
offers a bearer token is judged by the token alone, so a script with a wrong token gets 401 even from a
browser with a session.
Only GET and HEAD: nothing here writes, so there is no CSRF surface either.
"""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from crawlcore.models import Server
from crawler.status import Status
from crawler.urlnorm import ServerKey
from dashboard.api_access import api_view, scope_of
from dashboard.selectors_crawl import summary_counts
from dashboard.selectors_grid import monitor_status_counts
from monitoring.models import ServerMonitor
from monitoring.selectors import servers_shown

MAX_LIMIT = 10_000


@api_view(whole_crawl=True)
def summary(request: HttpRequest) -> JsonResponse:
    """The crawl in numbers: what `manage.py crawl --json` prints, without the run's own figures
    (dashboard.selectors_crawl.summary_counts: at most API_COUNTS_MAX_AGE seconds old but for the checks)."""
    statuses = {status: n for status, n in monitor_status_counts().items() if n}
    return JsonResponse({"generated_at": timezone.now().isoformat(), **summary_counts(), "monitoring": statuses})


def _servers(*, limit: int, offset: int, groups: frozenset[str] | None = None) -> tuple[int, list[dict]]:
    """One page of servers by id, each with the monitor's row and, as its `status`, what the server shows
    (monitoring.selectors.servers_shown: the grid's and /metrics' rule, so stale and unconfirmed too), or
    None when it is not monitored. `groups`: only the servers of these groups."""
    qs = Server.objects.order_by("id")
    if groups is not None:
        qs = qs.filter(group__in=groups)
    rows = list(
        qs.values("id", "scheme", "host", "port", "ip", "group", "crawler_num", "enabled", "excluded_reason",
                  "alias_of_id", "robots_kind", "created_at")[offset : offset + limit]
    )
    ids = [row["id"] for row in rows]
    shown = dict(servers_shown().filter(id__in=ids).values_list("id", "shown_status"))
    monitors = {
        m["server_id"]: m
        for m in ServerMonitor.objects.filter(server_id__in=ids).values(
            "server_id", "enabled", "status", "status_since", "last_check_at", "last_category"
        )
    }
    for row in rows:
        row["origin"] = ServerKey(row["scheme"], row["host"], row["port"]).origin()
        monitor = monitors.get(row["id"])
        if monitor is not None:
            monitor.pop("server_id")
            monitor["confirmed_status"] = monitor["status"]
            monitor["status"] = shown.get(row["id"], Status.UNMONITORED.value)
        row["monitoring"] = monitor
    return qs.count(), rows


def _int_param(request: HttpRequest, name: str, default: int, maximum: int) -> int:
    raw = request.GET.get(name, "")
    if not raw:
        return default
    if not raw.isdigit() or int(raw) > maximum:
        raise ValueError(f"{name} must be an integer from 0 to {maximum}")
    return int(raw)


@api_view
def servers(request: HttpRequest) -> JsonResponse:
    """`?limit=` (default and maximum 10000) and `?offset=` page through the servers by id."""
    try:
        limit = _int_param(request, "limit", MAX_LIMIT, MAX_LIMIT)
        offset = _int_param(request, "offset", 0, 10**12)
    except ValueError as exc:
        return JsonResponse({"error": "bad request", "detail": str(exc)}, status=400)
    count, rows = _servers(limit=limit, offset=offset, groups=scope_of(request))
    return JsonResponse({"count": count, "limit": limit, "offset": offset, "servers": rows})


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness of the web app and its database, for health checks: no authentication, no details leaked."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse({"status": "error", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
