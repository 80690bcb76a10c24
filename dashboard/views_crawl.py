"""The crawl page: URLs by state and their history, the scheduler's priority table, check rates, queues,
workers, the top pages and beat's runs. About every server: not for a reader limited to server groups."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from crawlcore.selectors_jobs import jobs_states
from ranking.selectors import latest_run, top_pages

from . import broker, selectors_crawl
from .cache import cached
from .view_access import whole_crawl_view

PRIORITY_TTL = 60.0  # the priority table follows the hourly load profiles: a minute is fresh enough


def _priority_table() -> dict:
    """The scheduler's priority table and its rendering (240 linked cells): the same for every viewer and
    built from the hourly load profiles, so kept PRIORITY_TTL seconds per process."""

    def compute() -> dict:
        data = selectors_crawl.crawl_priority()
        html = render_to_string("dashboard/_priority.html", {"priority": data, "hours": range(24)})
        return {"data": data, "html": html}

    return cached("crawl_priority", PRIORITY_TTL, compute)


@whole_crawl_view
def crawl(request: HttpRequest) -> HttpResponse:
    priority = _priority_table()
    top = top_pages(limit=20)
    titles = selectors_crawl.top_page_titles([p["url_id"] for p in top])
    for p in top:
        p["title"] = titles.get(p["url_id"], "")
    return render(
        request,
        "dashboard/crawl.html",
        {
            "urls": selectors_crawl.url_state_counts(),
            "history": selectors_crawl.crawl_history(),
            "priority": priority["data"],
            "priority_html": priority["html"],
            "max_age": int(selectors_crawl.PAGE_COUNTS_MAX_AGE),
            "rate_1m": selectors_crawl.check_rates(seconds=60),
            "rate_5m": selectors_crawl.check_rates(seconds=300),
            "queues": broker.queue_lengths(),
            "broker_is_redis": broker.broker_is_redis(),
            "workers": broker.workers_online(),
            "top": top,
            "rank_run": latest_run(),
            "beat_runs": selectors_crawl.beat_runs(),
            "jobs": jobs_states(),
        },
    )
