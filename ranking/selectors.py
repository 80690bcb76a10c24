"""Reads for the dashboard and the admin: top pages overall, per site and per domain; top sites."""

from __future__ import annotations

from crawlcore.models import Server

from .models import PageRank, RankRun

_PAGE_FIELDS = ("url_id", "url__url", "url__state", "server_id", "domain", "community", "rank", "computed_at")


def top_pages(*, site: Server | int | None = None, domain: str | None = None, limit: int = 20) -> list[dict]:
    """The highest-ranked pages of the latest run, overall or of one site (a Server or its id) or one
    registered domain. Each item: url_id, url, state, server_id, domain, community, rank, computed_at.
    Served by the (server, -rank), (domain, -rank) and (-rank) indexes."""
    rows = PageRank.objects.all()
    if site is not None:
        rows = rows.filter(server_id=site.pk if isinstance(site, Server) else site)
    if domain is not None:
        rows = rows.filter(domain=domain)
    out = []
    for row in rows.order_by("-rank", "url_id").values(*_PAGE_FIELDS)[:limit]:
        row["url"] = row.pop("url__url")
        row["state"] = row.pop("url__state")
        out.append(row)
    return out


def latest_run() -> RankRun | None:
    return RankRun.objects.order_by("-finished_at").first()
