"""The dead-link report: every site's broken links (the link reports' record, summed by dashboard.rollups),
one site's page by page, and both as CSV or JSON."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string

from crawlcore.models import Server
from crawlcore.selectors import urls_orphaned, urls_orphaned_count
from reports.export import FORMATS, dead_links_export
from reports.selectors import link_breaks_count, link_breaks_first, link_breaks_of_site

from . import cache, selectors_crawl
from .view_access import dashboard_view, reader_scope, visible_server


@dashboard_view
def dead_links(request: HttpRequest) -> HttpResponse:
    report = selectors_crawl.dead_links_figures()
    scope = reader_scope(request)
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
    visible_server(request, srv)
    after = _after(request)
    as_of = selectors_crawl.dead_links_figures().computed_at  # refreshes the record when it is stale, as beat does
    links = link_breaks_of_site(server_id=server_id, after=after, limit=selectors_crawl.DEAD_LINKS_PAGE + 1)
    more = len(links) > selectors_crawl.DEAD_LINKS_PAGE
    links = links[: selectors_crawl.DEAD_LINKS_PAGE]
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
    name, groups = "dead-links", reader_scope(request)
    if server_id is not None:
        srv = get_object_or_404(Server, pk=server_id)
        visible_server(request, srv)
        name = f"dead-links-{srv.host}"
    response = StreamingHttpResponse(
        dead_links_export(fmt=fmt, server_id=server_id, groups=groups),
        content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/json",
    )
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
