"""The load heatmap, the monthly uptime report and the search of stored pages: of the servers the reader
may see."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone

from monitoring.report import COLUMNS as UPTIME_COLUMNS
from monitoring.report import FORMATS as UPTIME_FORMATS
from monitoring.report import MAINTENANCE_NOTE, ReportError, report_write, uptime_report
from search.selectors import Filters, SearchError, search_pages

from .cache import cached
from .selectors_grid import grid_groups
from .selectors_heatmap import load_heatmap
from .view_access import dashboard_view, int_param, reader_scope, visible_groups

HEATMAP_TTL = 60.0


def _heatmap_table(group: str, scope: frozenset[str] | None) -> dict:
    """The heatmap's rows, rendered (4,800 cells for 200 servers): the same for every viewer (of one
    scope) and built from profiles beat rebuilds hourly, so kept a minute per process."""

    def compute() -> dict:
        rows = load_heatmap(group=group, groups=scope)
        html = render_to_string("dashboard/_heatmap_rows.html", {"rows": rows})
        return {"html": html, "as_of": timezone.now(), "n": len(rows)}

    if group and group not in grid_groups():
        return compute()
    return cached(f"heatmap:{json.dumps([group, None if scope is None else sorted(scope)])}", HEATMAP_TTL, compute)


@dashboard_view
def heatmap(request: HttpRequest) -> HttpResponse:
    group = request.GET.get("group", "")[:100]
    scope = reader_scope(request, group)
    table = _heatmap_table(group, scope)
    return render(
        request,
        "dashboard/heatmap.html",
        {
            "rows_html": table["html"],
            "n_rows": table["n"],
            "as_of": table["as_of"],
            "group": group,
            "groups": visible_groups(scope),
            "hours": range(24),
        },
    )


def _uptime_report(request: HttpRequest):
    """The month's report of the servers the reader may see (`?month=YYYY-MM`, `?group=`)."""
    group = request.GET.get("group", "")[:100]
    scope = reader_scope(request, group)
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
        "report": report, "rows": rows, "columns": UPTIME_COLUMNS, "group": group, "groups": visible_groups(scope),
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
    offset = int_param(request, "offset")
    filters = Filters(site=request.GET.get("site", "").strip()[:300], group=group, content_type=kind,
                      groups=reader_scope(request, group))  # fmt: skip
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
            "groups": visible_groups(filters.groups),
        },
    )  # fmt: skip
