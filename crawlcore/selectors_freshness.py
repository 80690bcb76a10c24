"""Reads of freshness objectives: an objective's pages, each page's change rate and the time since it was last
found current, and what follows (scheduling.freshness): p50/p95 staleness now, whether the target holds, the
share of hours it held over 30 days, the budget it would need, its servers' lastmod honesty. One home for what
`manage.py freshness_report`, the API and the dashboard show."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from crawler.lifecycle import Agent, State
from scheduling import freshness as fr

from . import access
from .models import FreshnessHour, FreshnessObjective, JobUrl, LastmodTally, Server, Url, UrlEvent

FIELDS = ("objective", "site", "pages", "p50_staleness_s", "p95_staleness_s", "target_s", "met", "hours_met_pct",
          "budget", "budget_needed", "lastmod_honesty")  # fmt: skip
HOURS_WINDOW = timedelta(days=30)
CHUNK = 2000
LAG_WINDOW = timedelta(hours=6)  # a server's reload lag is read from its reloads of these last hours …
LAG_SAMPLE = 50  # … at most its newest this many


def objective_urls(obj: FreshnessObjective) -> QuerySet:
    """The objective's pages before `pages` narrows them: URLs of its site or job with a stored copy, not set
    aside, not a page's resource."""
    rows = Url.objects.filter(page__isnull=False, exclusion_reason="", resource=False)
    if obj.site_id:
        return rows.filter(server_id=obj.site_id)
    return rows.filter(id__in=JobUrl.objects.filter(job_id=obj.job_id).values("url_id"))


def objective_pages(obj: FreshnessObjective) -> list[dict]:
    """The objective's pages as rows of id, url, server_id and last_checked_at: all of them, the N best by
    rank (ties and unranked pages: the smaller id), or those whose path the regex finds."""
    pages = fr.pages_parse(obj.pages)
    rows = objective_urls(obj).values("id", "url", "server_id", "last_checked_at", "state", "sitemap_lastmod")
    if pages.kind == "top":
        return list(rows.order_by(F("pagerank__rank").desc(nulls_last=True), "id")[: pages.top])
    if pages.kind == "all":
        return list(rows.order_by("id"))
    pattern = re.compile(pages.pattern)
    return [r for r in rows.order_by("id").iterator(chunk_size=CHUNK) if pattern.search(urlsplit(r["url"]).path)]


def _history(ids: list[int]) -> tuple[dict[int, tuple[int, int]], dict[int, datetime], dict[int, datetime]]:
    """Per URL: (active-scan checks, those that found a change), its first load, and when a load or a check
    last found it current (its newest event into Visited: for a page a check has since found changed, the
    start of the interval in which the change came)."""
    checks: dict[int, tuple[int, int]] = {}
    first: dict[int, datetime] = {}
    last: dict[int, datetime] = {}
    for part in _chunks(ids):
        scans = UrlEvent.objects.filter(url_id__in=part, agent=Agent.ACTIVE_SCAN.value, from_state=State.VISITED.value)
        scans = scans.filter(to_state__in=[State.VISITED.value, State.INIT.value]).values("url_id")
        for r in scans.annotate(n=Count("id"), x=Count("id", filter=Q(to_state=State.INIT.value))):
            checks[r["url_id"]] = (r["n"], r["x"])
        current = UrlEvent.objects.filter(url_id__in=part, to_state=State.VISITED.value).values("url_id")
        for r in current.annotate(first=Min("at", filter=Q(agent=Agent.LOAD.value)), last=Max("at")):
            if r["first"] is not None:
                first[r["url_id"]] = r["first"]
            last[r["url_id"]] = r["last"]
    return checks, first, last


def _chunks(ids: list[int]):
    for i in range(0, len(ids), CHUNK):
        yield ids[i : i + CHUNK]


def servers_reload_lag(ids: list[int], *, now: datetime) -> dict[int, float]:
    """Per server of these URLs: its reload lag, the p95 of the seconds from an active-scan check that found a
    change to the reload that made the copy current again, over its LAG_SAMPLE newest such reloads within
    LAG_WINDOW (servers with none: absent, a lag of 0)."""
    found = UrlEvent.objects.filter(
        agent=Agent.ACTIVE_SCAN.value, from_state=State.VISITED.value, to_state=State.INIT.value,
        at__gte=now - LAG_WINDOW,
    )  # fmt: skip
    reload = UrlEvent.objects.filter(
        url_id=OuterRef("url_id"), agent=Agent.LOAD.value, to_state=State.VISITED.value, at__gte=OuterRef("at")
    ).order_by("at")
    lags: dict[int, list[float]] = defaultdict(list)
    for part in _chunks(ids):
        rows = found.filter(url_id__in=part).annotate(reloaded=Subquery(reload.values("at")[:1]))
        for server, at, reloaded in rows.filter(reloaded__isnull=False).values_list("url__server_id", "at", "reloaded"):
            lags[server].append(((reloaded - at).total_seconds(), at))
    out = {}
    for server, pairs in lags.items():
        newest = [lag for lag, _ in sorted(pairs, key=lambda p: p[1], reverse=True)[:LAG_SAMPLE]]
        out[server] = fr.percentile(newest, 95) or 0.0
    return out


def _sitemap_read(rows: list[dict]) -> dict[int, datetime]:
    """When each server of these rows whose lastmod may be trusted (servers_lastmod_untrusted) last read its
    sitemaps."""
    servers = {r["server_id"] for r in rows} - set(servers_lastmod_untrusted())
    found = Server.objects.filter(id__in=servers, sitemaps_read_at__isnull=False)
    return dict(found.values_list("id", "sitemaps_read_at"))


def found_current_at(row: dict, read: dict[int, datetime]) -> datetime | None:
    """When a page was last found current: its last check or load, or later, the last reading of an honest
    server's sitemaps that gave its lastmod no newer than that check (the server saying "not changed since",
    a check that cost no request to the page)."""
    checked, lastmod, read_at = row["last_checked_at"], row.get("sitemap_lastmod"), read.get(row["server_id"])
    if checked and lastmod and read_at and lastmod <= checked < read_at and row.get("state") != State.INIT.value:
        return read_at
    return checked


def _changed_within(checked: datetime | None, found: datetime | None) -> float:
    """A page a check found changed (it has a stored copy and waits to be reloaded) is stale since the
    change, which came between that check and the last time the page was found current: that interval in
    seconds (0: not known)."""
    return (checked - found).total_seconds() if found and checked and found < checked else 0.0


def page_states(rows: list[dict], *, now: datetime) -> list[fr.PageState]:
    """Each page's server, change rate (seed 004's estimator with its prior, as the recrawl choice has it),
    seconds since it was last found current (found_current_at), and how long after it is due a check's reload
    comes (the active sweep's period, CRAWL_STALENESS_PERIOD, and its server's reload lag)."""
    ids = [r["id"] for r in rows]
    checks, first, before = _history(ids)
    lags = servers_reload_lag(ids, now=now)
    read = _sitemap_read(rows)
    prior = 1.0 / settings.CRAWL_RECRAWL_CYCLE
    out = []
    for r in rows:
        checked = r["last_checked_at"]
        current = found_current_at(r, read)
        n, x = checks.get(r["id"], (0, 0))
        loaded = first.get(r["id"], checked)
        watched = (checked - loaded).total_seconds() if checked and loaded else 0.0
        rate = fr.change_rate(checks=n, changed=x, watched=watched, prior=prior)
        since = (now - current).total_seconds() if current else None
        known, within = None, 0.0
        if since is not None and r.get("state") == State.INIT.value:
            within = _changed_within(checked, before.get(r["id"]))
            interval = within or (watched / n if n else 1.0 / rate)  # without it, its mean check interval
            known = since + fr.staleness_at_detection(rate, interval)
        # A page due between two sweeps waits for the next one, then for its server's reload lag.
        lag = settings.CRAWL_STALENESS_PERIOD + lags.get(r["server_id"], 0.0)
        out.append(fr.PageState(server=r["server_id"], rate=rate, since_current=since, known_stale=known,
                                changed_within=within, lag=lag))  # fmt: skip
    return out


def servers_honesty(server_ids) -> dict[int, float | None]:
    """Each server's lastmod honesty (scheduling.freshness.lastmod_honesty); None: no evidence yet."""
    out: dict[int, float | None] = dict.fromkeys(server_ids)
    for t in LastmodTally.objects.filter(server_id__in=list(out)):
        out[t.server_id] = fr.lastmod_honesty(
            announced=t.announced, confirmed=t.confirmed, found=t.found, foretold=t.foretold
        )
    return out


def servers_lastmod_untrusted() -> list[int]:
    """Servers whose lastmod has proved dishonest (scheduling.freshness.lastmod_trusted): their sitemap lastmod
    no longer makes a page due."""
    out = []
    for t in LastmodTally.objects.all():
        score = fr.lastmod_honesty(announced=t.announced, confirmed=t.confirmed, found=t.found, foretold=t.foretold)
        if not fr.lastmod_trusted(score):
            out.append(t.server_id)
    return out


def _hours(obj: FreshnessObjective, *, now: datetime) -> list[bool]:
    """Its recorded hours of the last 30 days, met or not."""
    flags = FreshnessHour.objects.filter(objective=obj, hour__gte=now - HOURS_WINDOW, hour__lte=now)
    return list(flags.values_list("met", flat=True))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def objective_status(obj: FreshnessObjective, *, now: datetime | None = None, with_hours: bool = True) -> dict:
    """The report's fields of one objective (FIELDS), and `attainable` (its budget covers what the target
    needs), `budget_left_pct` (its error budget left over 30 days' hours), `pages_measured` and `stalest`
    ((url id, staleness) of its ten stalest pages, stalest first)."""
    now = now or timezone.now()
    rows = objective_pages(obj)
    states = page_states(rows, now=now)
    staleness = fr.staleness_of(states)
    p50, p95 = fr.pages_quantiles(states, (50, 95))
    needed = fr.budget_needed(states, float(obj.target))
    hours = _hours(obj, now=now) if with_hours else []
    honesty = [h for h in servers_honesty({r["server_id"] for r in rows}).values() if h is not None]
    measured = [(fr.expected_staleness(s.rate, s.since_current), r["id"]) for s, r in zip(states, rows, strict=True)
                if s.since_current is not None]  # fmt: skip
    return {
        "objective": obj.name,
        "site": obj.scope_name,
        "pages": obj.pages,
        "p50_staleness_s": _rounded(p50),
        "p95_staleness_s": _rounded(p95),
        "target_s": obj.target,
        "met": fr.target_met(p95, obj.target),
        "hours_met_pct": _rounded(fr.hours_met_pct(hours)),
        "budget": obj.budget,
        "budget_needed": needed,
        "lastmod_honesty": round(min(honesty), 3) if honesty else None,
        "attainable": needed <= obj.budget,
        "budget_left_pct": _rounded(fr.budget_left_pct(hours)),
        "pages_measured": len(staleness),
        "stalest": [(i, round(a, 1)) for a, i in sorted(measured, reverse=True)[:10]],
    }


def objectives_visible(user=None) -> QuerySet:
    """The objectives this reader may see: those of a site or job in the reader's server groups (access.rows_q);
    None: every objective (the shell)."""
    rows = FreshnessObjective.objects.select_related("site", "job").order_by("name")
    return rows if user is None else access.rows_visible(user, rows, ("site__group", "job__group"))


def objectives_status(*, user=None, now: datetime | None = None) -> list[dict]:
    now = now or timezone.now()
    return [objective_status(obj, now=now) for obj in objectives_visible(user)]


def objectives_month_lines(*, server_ids, start: datetime, end: datetime) -> list[str]:
    """One line per freshness objective of these servers' sites, for the monthly SLA report: the share of the
    month's recorded hours in which its target held, and its budget against what it needs now."""
    lines = []
    for obj in FreshnessObjective.objects.filter(site_id__in=list(server_ids)).select_related("site").order_by("name"):
        flags = FreshnessHour.objects.filter(objective=obj, hour__gte=start, hour__lt=end).values_list("met", flat=True)
        pct = fr.hours_met_pct(flags)
        held = "no hour recorded" if pct is None else f"held {pct:.1f} % of {len(flags)} hours"
        needed = objective_status(obj, with_hours=False)["budget_needed"]
        lines.append(f"freshness {obj.name} ({obj.site.origin}, {obj.pages}): p95 staleness within {obj.target} s "
                     f"{held}; budget {obj.budget} requests/server/day, {needed} needed now")  # fmt: skip
    return lines


def objective_days(obj: FreshnessObjective, *, now: datetime | None = None, days: int = 30) -> list[dict]:
    """The last `days` days of an objective, oldest first: each {day, met, hours, category, summary}, category
    "normal" when every recorded hour held the target, "delay" when most did, "error" otherwise, "" with none."""
    now = now or timezone.now()
    start = timezone.localdate(now) - timedelta(days=days - 1)
    by_day: dict = {start + timedelta(days=k): [] for k in range(days)}
    rows = FreshnessHour.objects.filter(objective=obj, hour__gte=now - timedelta(days=days + 1), hour__lte=now)
    for hour, met in rows.values_list("hour", "met"):
        day = timezone.localdate(hour)
        if day in by_day:
            by_day[day].append(met)
    out = []
    for day, flags in by_day.items():
        met = sum(1 for f in flags if f)
        share = met / len(flags) if flags else None
        category = "" if share is None else "normal" if share == 1 else "delay" if share >= 0.5 else "error"
        summary = f"{day}: no hour recorded" if not flags else f"{day}: target held {met} of {len(flags)} hours"
        out.append({"day": day, "met": met, "hours": len(flags), "category": category, "summary": summary})
    return out
