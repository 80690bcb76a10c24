"""What every page's template may use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def time_zone(request: HttpRequest) -> dict:
    """The operator's zone, which every time on the pages is shown in (charts label their axis with it)."""
    return {"time_zone": settings.TIME_ZONE}


# Each page's topic in the user guide (docs/, built by `make docs`), by the page's URL name; a page not
# named here links the guide's start.
GUIDE_TOPICS = {
    "dashboard:grid": "dashboard/", "dashboard:server": "monitoring/", "dashboard:crawl": "crawling/",
    "dashboard:dead-links": "link-reports/", "dashboard:dead-links-site": "link-reports/",
    "dashboard:heatmap": "scheduling/", "dashboard:uptime": "monitoring/", "dashboard:search": "search/",
    "dashboard:jobs": "jobs/", "dashboard:job": "jobs/", "analyzer:dashboard": "analyzer/",
    "dashboard:login": "security/", "dashboard:incident": "incidents/", "dashboard:freshness": "freshness/",
}  # fmt: skip


def guide(request: HttpRequest) -> dict:
    """`guide_url`: this page's topic in the user guide, for the "?" link in the page's header."""
    match = getattr(request, "resolver_match", None)
    topic = GUIDE_TOPICS.get(match.view_name if match else "", "")
    return {"guide_url": f"{settings.GUIDE_URL}{topic}"}
