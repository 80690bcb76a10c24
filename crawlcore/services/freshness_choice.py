"""The active scan's choice under freshness objectives: each objective's pages get the checks they need
to hold its target, first, inside each server's daily request budget.

* **Due for its objective**: a page whose time since it was last found current has reached the longest check
  interval at which the chance it is stale by more than the objective's target when its reload comes stays
  within 2.5 % (scheduling.freshness.interval_for, from its change rate and its server's reload lag): the
  most overdue (τ / I) first. These bypass the revisit floor CRAWL_REVISIT_AFTER: the objective says how
  often they are worth a request.
* **Budget**: a server some objective covers may take, in any 24 hours, at most the smallest budget of those
  objectives in requests, and in any hour at most a 24th of it (its status checks of every agent count, and a
  page waiting to be reloaded counts as one to come). A check is chosen only while two requests are left (the
  check, and the reload it may cause), and takes 1 + the chance it finds a change from what is left; every
  candidate of the server, for an objective or not, spends from the same budget, and a server with nothing
  left gets none.
* **Fair shares**: the due pages are taken a server at a time (each server's most overdue, then each one's
  second, ...), so an objective whose target is out of reach does not take every check of a period.
* **Politeness** is the sweep's: URLs of servers held by their health are never candidates (`_scannable`).

An objective whose target cannot be held within its budget loses some checks here; the report says so with
the budget it would need (crawlcore.selectors_freshness).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.db.models import Count, Min, QuerySet

from crawlcore.models import FreshnessObjective, JobUrl, StatusCheck, Url
from crawlcore.selectors_freshness import objective_pages, page_states
from crawler.lifecycle import State
from scheduling import freshness as fr

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def servers_budget(*, now: datetime) -> dict[int, int]:
    """Each server an objective covers and its daily request budget (the smallest of those objectives')."""
    caps: dict[int, int] = {}
    for site_id, budget in FreshnessObjective.objects.filter(site__isnull=False).values_list("site_id", "budget"):
        caps[site_id] = min(budget, caps.get(site_id, budget))
    by_job = FreshnessObjective.objects.filter(job__isnull=False).values("job_id").annotate(b=Min("budget"))
    for row in by_job:
        servers = Url.objects.filter(id__in=JobUrl.objects.filter(job_id=row["job_id"]).values("url_id"))
        for server_id in servers.values_list("server_id", flat=True).distinct():
            caps[server_id] = min(row["b"], caps.get(server_id, row["b"]))
    return caps


def _requests_since(server_ids: list[int], since: datetime, now: datetime) -> dict[int, int]:
    used = StatusCheck.objects.filter(server_id__in=server_ids, checked_at__gt=since, checked_at__lte=now)
    return dict(used.values("server_id").annotate(n=Count("id")).values_list("server_id", "n"))


def budget_left(*, now: datetime) -> dict[int, float]:
    """Requests each budgeted server may still take, spent evenly over the day: the least of its budget less
    its requests of the last 24 hours and a 24th of it less its requests of the last hour, less its pages
    waiting to be reloaded. (Unpaced, a day's budget could go in its first minutes and leave the other hours
    without a check.)"""
    caps = servers_budget(now=now)
    if not caps:
        return {}
    ids = list(caps)
    day, hour = _requests_since(ids, now - DAY, now), _requests_since(ids, now - HOUR, now)
    reloads = Url.objects.filter(server_id__in=ids, state=State.INIT.value, page__isnull=False)
    waiting = dict(reloads.values("server_id").annotate(n=Count("id")).values_list("server_id", "n"))
    return {
        s: float(min(cap - day.get(s, 0), cap * (HOUR / DAY) - hour.get(s, 0)) - waiting.get(s, 0))
        for s, cap in caps.items()
    }


def objectives_due(*, now: datetime, scannable: QuerySet) -> list[tuple[float, int, int, float]]:
    """(urgency, url id, server id, expected requests) of every objective page due now, most overdue first:
    urgency τ / I ≥ 1, I the check interval its target needs. `scannable`: the Visited URLs the sweep may
    send now (not leased, not held)."""
    free = set(scannable.values_list("id", flat=True))
    out: dict[int, tuple[float, int, int, float]] = {}
    for obj in FreshnessObjective.objects.select_related("site", "job"):
        rows = [r for r in objective_pages(obj) if r["id"] in free]
        for r, page in zip(rows, page_states(rows, now=now), strict=True):
            if page.since_current is None:
                continue
            interval = fr.interval_for(page.rate, float(obj.target), lag=page.lag)
            urgency = page.since_current / interval if interval > 0 else math.inf
            cost = 1.0 + (1.0 - math.exp(-page.rate * page.since_current))
            if urgency >= 1.0 and urgency > out.get(r["id"], (0.0,))[0]:
                out[r["id"]] = (urgency, r["id"], page.server, cost)
    return _interleaved(sorted(out.values(), key=lambda t: (-t[0], t[1])))


def _interleaved(due: list[tuple[float, int, int, float]]) -> list[tuple[float, int, int, float]]:
    """`due` (most overdue first) taken a server at a time: each server's most overdue page, then each one's
    second, ... A tight target's pages are always most overdue; taken in plain order they would fill the
    sweep's room every period and leave other servers' objectives none (each server has its own politeness
    slot, so interleaving costs no server anything)."""
    rank: dict[int, int] = {}
    ranked = []
    for item in due:
        server = item[2]
        rank[server] = rank.get(server, 0) + 1
        ranked.append((rank[server], item))
    return [item for _, item in sorted(ranked, key=lambda pair: pair[0])]  # stable: urgency within a rank


def within_budget(
    ids: list[int], *, left: dict[int, float], costs: dict[int, float] | None = None, limit: int | None = None
) -> list[int]:
    """`ids` in their order (the first `limit`), less those of a budgeted server with fewer than two requests
    left (each taken spends its cost, 2 when not known: a check and a reload). `left` is spent in place."""
    limit = len(ids) if limit is None else limit
    if not left or not ids:
        return ids[:limit]
    costs = costs or {}
    server_of = dict(Url.objects.filter(id__in=ids).values_list("id", "server_id"))
    out = []
    for url_id in ids:
        if len(out) >= limit:
            break
        server = server_of.get(url_id)
        if server in left:
            if left[server] < 2:
                continue
            left[server] -= costs.get(url_id, 2.0)
        out.append(url_id)
    return out


def freshness_first(*, now: datetime, scannable: QuerySet, limit: int, left: dict[int, float]) -> list[int]:
    """The objective pages to check first this period (at most `limit`), inside the budgets `left` (spent)."""
    if limit <= 0 or not FreshnessObjective.objects.exists():
        return []
    due = objectives_due(now=now, scannable=scannable)
    costs = {url_id: cost for _, url_id, _, cost in due}
    return within_budget([url_id for _, url_id, _, _ in due], left=left, costs=costs, limit=limit)


def spent(left: dict[int, float]) -> list[int]:
    """The budgeted servers with fewer than two requests left: none of their URLs is a candidate."""
    return [server for server, n in left.items() if n < 2]
