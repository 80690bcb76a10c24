"""Reads for the crawl page, the dead-link report, the API's summary and /metrics.

Nothing here counts a big table per request: the crawl's counts, the check totals and the dead-link report
are snapshots kept by dashboard.rollups (each with the time it was computed, which the pages show); recent
checks are found by their id range (ids grow with time) and table sizes come from PostgreSQL's estimate.
The only write reachable from here is a stale rollup's read-through refresh (dashboard.rollups.figures).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import Count, Model
from django.utils import timezone

from crawlcore.db import estimates
from crawlcore.models import BeatJobRun, Page, StatusCheck
from crawlcore.selectors import check_category_counts, check_time_floor
from crawlcore.services.schedule import schedule_table
from crawler.lifecycle import Agent, State
from crawler.status import Category

from . import rollups
from .cache import cached
from .charts import JSON_SCRIPT_ESCAPES, ChartData
from .idrange import first_id_since
from .models import CrawlSample

SERVER_ANSWERS = rollups.SERVER_ANSWERS

# How old each figure may be when a reader gets it (seconds). Beat refreshes the rollups well within
# theirs (every 60 s, dead links every 300 s), so readers compute only when beat is late or absent.
API_COUNTS_MAX_AGE = 5.0  # /api/summary: scripts poll it during a crawl and expect it to move
PAGE_COUNTS_MAX_AGE = 60.0  # the crawl page and /metrics
CHECK_TOTALS_MAX_AGE = 600.0  # plus the live count of the newest checks: exact whatever its age
DEAD_LINKS_MAX_AGE = 900.0
DEAD_LINKS_PAGE = 50


# --------------------------------------------------------------------------------------------------
# Cheap sizes and recent rows


def table_estimate(model: type[Model]) -> int:
    """Rows in the table, estimated without reading it (crawlcore.db.estimates)."""
    return estimates.table_rows(model)


def recent_checks(*, seconds: float, now: datetime | None = None):
    """StatusCheck rows of the last `seconds`, as a queryset bounded by an id range."""
    now = now or timezone.now()
    since = now - timedelta(seconds=seconds)
    first = first_id_since(StatusCheck, "checked_at", since, floor=check_time_floor(since))
    if first is None:
        return StatusCheck.objects.none()
    return StatusCheck.objects.filter(pk__gte=first, checked_at__gte=since)


def check_rates(*, seconds: float = 60.0) -> dict:
    """Finished checks per second over the last `seconds`, by category and by agent."""

    def compute() -> dict:
        by = Counter()
        recent = recent_checks(seconds=seconds).filter(category__in=SERVER_ANSWERS)
        for agent, category, n in recent.values_list("agent", "category").annotate(n=Count("id")).order_by():
            by[("agent", agent)] += n
            by[("category", category)] += n
        return {
            "seconds": seconds,
            "total": sum(n for (kind, _), n in by.items() if kind == "agent") / seconds,
            "by_category": {c.value: by[("category", c.value)] / seconds for c in Category},
            "by_agent": {a.value: by[("agent", a.value)] / seconds for a in Agent},
        }

    return cached(f"check_rates:{seconds}", 5.0, compute)


# --------------------------------------------------------------------------------------------------
# The crawl in numbers (snapshots kept by dashboard.rollups)


def crawl_figures(*, max_age: float = PAGE_COUNTS_MAX_AGE) -> rollups.Figures:
    """crawl_summary's counts (URLs by state and exclusion, failure kinds, servers, pages, links, work due)
    at most `max_age` seconds old, shared by every process."""
    return rollups.figures(rollups.CRAWL_SUMMARY, max_age=max_age, compute=rollups.crawl_summary_compute)


def check_totals() -> dict[str, int]:
    """Status checks by category, exact: the rollup of every settled check plus a live count of the newer
    ones (an id range: the last few minutes of checks, whatever the table's size)."""
    rollup = rollups.figures(rollups.CHECK_TOTALS, max_age=CHECK_TOTALS_MAX_AGE, compute=rollups.check_totals_compute)
    totals = dict(rollup.data["categories"])
    for category, n in check_category_counts(rollups.checks_after(rollup.data)).items():
        totals[category] = totals.get(category, 0) + n
    return totals


def summary_counts() -> dict:
    """What /api/summary reports: crawl_summary's figures (at most API_COUNTS_MAX_AGE old; `as_of` says
    when they were counted) and the check totals (exact)."""
    crawl = crawl_figures(max_age=API_COUNTS_MAX_AGE)
    return {"as_of": crawl.computed_at.isoformat(), **crawl.data, "checks": check_totals()}


def url_state_counts() -> dict:
    """URLs by state (excluded ones apart) and excluded by reason, as of `computed_at` (at most
    PAGE_COUNTS_MAX_AGE seconds ago)."""
    crawl = crawl_figures()
    reasons = dict(sorted(crawl.data["excluded"].items(), key=lambda kv: (-kv[1], kv[0])))
    return {
        "states": crawl.data["states"],
        "excluded": sum(reasons.values()),
        "reasons": reasons,
        "not_followed": crawl.data.get("not_followed", {}),  # absent from a snapshot of an older version
        "total": crawl.data["urls"],
        "computed_at": crawl.computed_at,
    }


CRAWL_HISTORY = timedelta(hours=24)
CRAWL_HISTORY_POINTS = 360  # a day of minute samples is 1,440: every fourth is plenty for a line chart
CRAWL_HISTORY_TTL = 15.0  # beat samples once a minute; a running crawl command more often at first


def crawl_history(*, now: datetime | None = None) -> ChartData:
    """The crawl's URLs by state over the last CRAWL_HISTORY, from its samples (dashboard.rollups keeps
    one per computation of the counts), thinned to at most CRAWL_HISTORY_POINTS (every k-th, counted back
    from the newest, which is always kept), as chart JSON: {"labels": [ISO times], "series": {state:
    [URLs]}}. Shared by every viewer for CRAWL_HISTORY_TTL seconds."""
    now = now or timezone.now()

    def compute() -> ChartData:
        rows = list(
            CrawlSample.objects.filter(at__gt=now - CRAWL_HISTORY, at__lte=now)
            .order_by("at")
            .values_list("at", "states", "excluded")
        )
        stride = -(-len(rows) // CRAWL_HISTORY_POINTS) or 1
        kept = rows[::-1][::stride][::-1]  # counted back from the newest, so the newest is always drawn
        names = [s.value for s in State]
        series: dict[str, list[int]] = {name: [] for name in names}
        series["excluded"] = []
        for _, states, excluded in kept:
            for name in names:
                series[name].append(states.get(name, 0))
            series["excluded"].append(excluded)
        data = {"labels": [at.isoformat() for at, _, _ in kept], "series": series}
        text = json.dumps(data, separators=(",", ":")).translate(JSON_SCRIPT_ESCAPES)
        return ChartData("samples", len(kept), text)

    return cached("crawl_history", CRAWL_HISTORY_TTL, compute)


PRIORITY_ROWS = 10  # the priority table's first rows: the servers sent first in each hour
PRIORITY_LISTED = 20  # this hour's first servers, listed with their profiles


def crawl_priority(*, now: datetime | None = None) -> dict:
    """The scheduler's priority table (seed 000) as the crawl page shows it: the active policy's server
    order for each hour of the day (its first PRIORITY_ROWS rows; cells are server ids), and this hour's
    first PRIORITY_LISTED servers with their best hour, their mean response time now and any pause."""
    table = schedule_table(now=now)
    # As the dispatcher orders them (ServerOrder.order): servers without a profile after the others.
    columns = [col + [sid for sid in table.unprofiled if sid not in col] for col in table.columns]
    depth = min(PRIORITY_ROWS, max((len(col) for col in columns), default=0))
    rows = [[col[r] if r < len(col) else None for col in columns] for r in range(depth)]
    origins = {sid: info["origin"] for sid, info in table.servers.items()}
    listed = []
    for sid in columns[table.hour][:PRIORITY_LISTED]:
        info = table.servers[sid]
        profile = info["profile_ms"]
        listed.append(
            {
                "id": sid,
                "origin": info["origin"],
                "best_hour": info["best_hour"],
                "ms_now": None if profile is None else profile[table.hour],
                "paused_until": datetime.fromisoformat(info["paused_until"]) if info["paused_until"] else None,
            }
        )
    return {
        "policy": table.policy,
        "hour": table.hour,
        "pause_lookahead": table.pause_lookahead,
        "servers": len(table.servers),
        "rows": [[(sid, origins.get(sid, "")) for sid in row] for row in rows],
        "listed": listed,
        "unprofiled": len(table.unprofiled),
    }


# --------------------------------------------------------------------------------------------------
# The dead-link report (the link reports' record, reports.LinkBreak, summed per site by dashboard.rollups)


def dead_links_figures() -> rollups.Figures:
    return rollups.figures(rollups.DEAD_LINKS, max_age=DEAD_LINKS_MAX_AGE, compute=rollups.dead_links_compute)


def top_page_titles(url_ids: Sequence[int]) -> dict[int, str]:
    return dict(Page.objects.filter(url_id__in=list(url_ids)).values_list("url_id", "title"))


def beat_runs() -> list[BeatJobRun]:
    """Every beat job's last and slowest run (crawlcore.services.beat_runs), the late ones first."""
    rows = list(BeatJobRun.objects.all())
    return sorted(rows, key=lambda r: (not r.late, r.name))
