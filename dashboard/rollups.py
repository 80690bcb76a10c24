"""The dashboard's precomputed figures, and the dashboard's only writes.

A page must not count a million URLs or five million checks per request. Figures that take seconds
are computed once and stored as a named Snapshot, which every web process (and machine) reads:
`figures(name, max_age=…, compute=…)` returns the stored figures while they are younger than the
reader accepts, else recomputes them. One computation at a time per name, cluster-wide (a PostgreSQL
advisory lock; a process lock on SQLite): a reader that finds another computing gets the previous
figures instead of queueing behind it, and only a reader that has none at all waits.

Beat recomputes them ahead of the readers (tasks/dashboard.py: the crawl's counts, the check totals and
every server's figures each minute, the broken-link rollup every five); a reader that wants the crawl's
counts fresher than that (the API's, at most 5 s old) computes them, at most once per few seconds. In
the embedded mode, which runs no beat for these, the first reader after `max_age` computes (its tables
are small).

Besides the snapshots, one rollup table, ServerRollup (a server's URL and failure counts), rewritten by
beat as a difference (the dead-link report sums the link reports' own record, reports.LinkBreak, which its
refresh keeps as a difference too, reading only what changed in the crawl since its previous run); and the
crawl's history, CrawlSample: every computation of the crawl's counts (beat's each minute, a reader's, the crawl
command's as it runs) leaves one sample, at most one per SAMPLE_MIN_GAP, kept SAMPLE_KEEP.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from crawlcore.db import locks, transactions
from crawlcore.models import Server, StatusCheck, Url
from crawlcore.selectors import check_category_counts, check_time_floor, crawl_summary
from crawler.lifecycle import State
from crawler.status import Category
from monitoring.selectors import uptime_counts
from reports.selectors import link_break_sites
from reports.services import link_breaks_refresh

from . import cache
from .idrange import first_id_since
from .models import CrawlSample, ServerRollup, Snapshot

FAILING = (State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value)
MEMO_SECONDS = 2.0  # a process re-reads a snapshot at most this often

CRAWL_SUMMARY = "crawl_summary"
CHECK_TOTALS = "check_totals"
DEAD_LINKS = "dead_links"
# Checks are stamped when their request starts and written (or finished) when it ends, within the fetch
# timeouts (45 s by default). The check totals are a rollup of every check older than this, plus a live
# count of the newer ones, so a check still being written is never left out of both.
CHECKS_SETTLE = timedelta(minutes=5)
CHECK_TOTALS_RECOUNT = timedelta(hours=1)
LATE_CHECK = timedelta(days=1)  # a check is written at most this long after its stamp (checks_after)
DEAD_LINK_SITES_SHOWN = 1000
SAMPLE_MIN_GAP = timedelta(seconds=1)  # two computations closer than this (beat's and a crawl's) leave one
SAMPLE_KEEP = timedelta(days=30)
CHECK_FAILURE_DAYS = 7  # a server's failed checks by kind: over this many days
SERVER_ROLLUPS = "server_rollups"  # the lock's name
# What the server did; anything else a check row may hold (a request still in flight, one cut short on
# our side) says nothing about the server.
SERVER_ANSWERS = tuple(c.value for c in Category)


@dataclass(frozen=True)
class Figures:
    name: str
    data: Any
    computed_at: datetime
    seconds: float

    @property
    def age(self) -> float:
        return (timezone.now() - self.computed_at).total_seconds()


def _stored(name: str) -> Figures | None:
    row = Snapshot.objects.filter(name=name).first()
    return None if row is None else Figures(name, row.data, row.computed_at, row.seconds)


@contextmanager
def _lock(name: str, *, wait: bool) -> Iterator[bool]:
    """Whether this caller may compute `name` now. Must run inside a transaction: on PostgreSQL the lock
    is an advisory transaction lock, released at commit, held across processes and machines."""
    with locks.advisory_lock("dashboard", name, wait=locks.FOREVER if wait else 0) as got:
        yield got


def _compute_and_store(name: str, compute: Callable[[], Any]) -> Figures:
    transactions.gently()
    started, t = timezone.now(), time.perf_counter()
    data = compute()
    seconds = time.perf_counter() - t
    Snapshot.objects.update_or_create(name=name, defaults={"data": data, "computed_at": started, "seconds": seconds})
    figures_ = Figures(name, data, started, seconds)
    cache.remember(f"figures:{name}", figures_)
    return figures_


def figures(name: str, *, max_age: float, compute: Callable[[], Any]) -> Figures:
    """The figures stored under `name` if computed less than `max_age` seconds ago; else computed now
    (by this caller, or by whoever is computing them already: then the previous ones are returned)."""
    memo = cache.recent(f"figures:{name}", MEMO_SECONDS)
    if isinstance(memo, Figures) and memo.age < max_age:
        return memo
    stored = _stored(name)
    if stored is not None and stored.age < max_age:
        cache.remember(f"figures:{name}", stored)
        return stored
    with transaction.atomic(), _lock(name, wait=stored is None) as got:
        if not got:
            return stored  # type: ignore[return-value]  # someone is computing; theirs come next time
        if stored is None:  # we may have waited for another computation: use it if it is fresh
            fresh = _stored(name)
            if fresh is not None and fresh.age < max_age:
                return fresh
        return _compute_and_store(name, compute)


def figures_refresh(name: str, compute: Callable[[], Any]) -> Figures | None:
    """Compute and store `name` now (beat); None when another process is computing it right now."""
    with transaction.atomic(), _lock(name, wait=False) as got:
        return _compute_and_store(name, compute) if got else None


# --------------------------------------------------------------------------------------------------
# The figures


def crawl_summary_compute() -> dict:
    """What `manage.py crawl --json` counts, check categories apart (the check totals add those up).
    Each computation also leaves a sample of the crawl's history, in the same transaction as the
    snapshot that stores the counts."""
    at = timezone.now()
    summary = crawl_summary(checks=False, exact_sizes=False)
    crawl_sample_record(summary, at=at)
    return summary


def crawl_sample_record(summary: dict, *, at: datetime) -> CrawlSample | None:
    """Keep the crawl's URLs by state from `summary` (crawl_summary's) as of `at`, unless a sample was
    taken less than SAMPLE_MIN_GAP before."""
    if CrawlSample.objects.filter(at__gt=at - SAMPLE_MIN_GAP, at__lte=at).exists():
        return None
    excluded = sum(summary["excluded"].values())
    return CrawlSample.objects.create(at=at, states=summary["states"], excluded=excluded)


def crawl_samples_prune(*, now: datetime | None = None) -> int:
    return CrawlSample.objects.filter(at__lt=(now or timezone.now()) - SAMPLE_KEEP).delete()[0]


def check_totals_compute(*, now: datetime | None = None) -> dict:
    """Checks by category, of every check up to `through_id`: the ones older than CHECKS_SETTLE, whose
    category no longer changes. Adds the checks settled since the stored totals to them; recounts the
    whole table when those are older than CHECK_TOTALS_RECOUNT, which also takes out the checks deleted
    since (the daily prune of old monitor checks)."""
    now = now or timezone.now()
    settled = now - CHECKS_SETTLE
    first_recent = first_id_since(StatusCheck, "checked_at", settled, floor=check_time_floor(settled))
    if first_recent is None:  # nothing recent: every check has settled
        through = StatusCheck.objects.aggregate(top=Max("id"))["top"] or 0
    else:
        through = first_recent - 1
    stored = _stored(CHECK_TOTALS)
    previous = stored.data if stored is not None else {}
    recounted = datetime.fromisoformat(previous["recounted_at"]) if "recounted_at" in previous else None
    mark = {"through_id": through, "through_at": settled.isoformat()}
    if recounted is None or now - recounted >= CHECK_TOTALS_RECOUNT or through < previous["through_id"]:
        counts = check_category_counts(StatusCheck.objects.filter(pk__lte=through))
        return {**mark, "categories": counts, "recounted_at": now.isoformat()}
    added = check_category_counts(checks_after(previous).filter(pk__lte=through))
    counts = {k: previous["categories"].get(k, 0) + added.get(k, 0) for k in {*previous["categories"], *added}}
    return {**mark, "categories": counts, "recounted_at": previous["recounted_at"]}


def checks_after(totals: dict):
    """The checks written after those a check-totals rollup counted (ids above its `through_id`). On a table
    partitioned by time, only the partitions from a day before its `through_at` are read: a check is
    written within its request's timeouts of its stamp, and one written later than a day after is counted
    at the next hourly recount."""
    qs = StatusCheck.objects.filter(pk__gt=totals["through_id"])
    if "through_at" in totals:
        floor = check_time_floor(datetime.fromisoformat(totals["through_at"]) - LATE_CHECK)
        if floor is not None:
            qs = qs.filter(checked_at__gte=floor)
    return qs


def dead_links_compute(*, full: bool = False) -> dict:
    """Bring the link reports' record up to date (reports.services.link_breaks_refresh: from what changed
    since its previous refresh, or everything when `full`; only the difference is written), then sum its open
    breaks up per site (reports.selectors.link_break_sites): the busiest DEAD_LINK_SITES_SHOWN sites. A
    refresh that changed nothing keeps the previous sums: they would come out the same.
    `removed`: breaks fixed by this refresh; `changed`: breaks new or changed; `urls`: URLs that changed
    (None: a full recompute)."""
    outcome = link_breaks_refresh(full=full)
    previous = _stored(DEAD_LINKS) if outcome.unchanged else None
    sites = previous.data["sites"] if previous is not None and "sites" in previous.data else _dead_link_sites()
    return {
        "sites": sites,
        "removed": outcome.fixed,
        "changed": outcome.new + outcome.changed,
        "urls": None if outcome.full else outcome.urls,
    }


def _dead_link_sites() -> list[dict]:
    """The per-site sums over every open break (reports.selectors.link_break_sites), with each site's origin."""
    rows = link_break_sites(limit=DEAD_LINK_SITES_SHOWN)
    servers = Server.objects.in_bulk([r["site_id"] for r in rows])
    return [
        {"server_id": r["site_id"], "origin": servers[r["site_id"]].origin, **{k: r[k] for k in r if k != "site_id"}}
        for r in rows
        if r["site_id"] in servers
    ]


EXCLUDED_PREFIX = "excluded: "  # a server's url_states key for the URLs excluded for one reason


def server_figures_compute(*, server_ids: Sequence[int] | None = None, now: datetime | None = None) -> dict[int, dict]:
    """Per server (all, or these): URLs by state, failing URLs by failure kind, and failed checks of the
    last CHECK_FAILURE_DAYS by failure kind, kinds most frequent first. Three GROUP BYs: over the URLs,
    the failing URLs, and the recent checks (an id range, so older checks are never read)."""
    now = now or timezone.now()
    since = now - timedelta(days=CHECK_FAILURE_DAYS)
    urls, checks = Url.objects.all(), StatusCheck.objects.filter(checked_at__gte=since, category__in=SERVER_ANSWERS)
    if server_ids is not None:
        urls, checks = urls.filter(server_id__in=server_ids), checks.filter(server_id__in=server_ids)
    else:
        first = first_id_since(StatusCheck, "checked_at", since, floor=check_time_floor(since))
        checks = checks.filter(pk__gte=first) if first is not None else checks.none()
    out: dict[int, dict] = defaultdict(lambda: {"url_states": {}, "failing_url_kinds": [], "check_failure_kinds": []})
    # As crawl_summary counts them (crawlcore.selectors): an excluded URL (robots.txt, scope) is counted by
    # its reason, not by the state it was left in, so the server page and the crawl page agree.
    by_state = urls.values_list("server_id", "state", "exclusion_reason").annotate(n=Count("id")).order_by()
    for sid, state, reason, n in by_state:
        key = f"{EXCLUDED_PREFIX}{reason}" if reason else state
        out[sid]["url_states"][key] = out[sid]["url_states"].get(key, 0) + n
    failing = urls.filter(state__in=FAILING).values_list("server_id", "failure_kind").annotate(n=Count("id"))
    for sid, kind, n in failing.order_by("server_id", "-n", "failure_kind"):
        out[sid]["failing_url_kinds"].append([kind or "(none)", n])
    failed = checks.exclude(failure_kind="").values_list("server_id", "failure_kind").annotate(n=Count("id"))
    for sid, kind, n in failed.order_by("server_id", "-n", "failure_kind"):
        out[sid]["check_failure_kinds"].append([kind, n])
    return dict(out)


def server_rollups_refresh(*, now: datetime | None = None) -> int | None:
    """Recompute every server's ServerRollup in one pass (its URL and failure figures, and its uptime
    windows' check counts from the hourly rollups) and write them in one upsert; rollups of servers no
    longer there are dropped. Returns servers written (None: another process is refreshing)."""
    now = now or timezone.now()
    with transaction.atomic(), _lock(SERVER_ROLLUPS, wait=False) as got:
        if not got:
            return None
        transactions.gently()
        figures_ = server_figures_compute(now=now)
        uptimes = uptime_counts(now=now)
        ids = list(Server.objects.values_list("id", flat=True))
        rows = [
            ServerRollup(
                server_id=sid,
                url_states=figures_.get(sid, {}).get("url_states", {}),
                failing_url_kinds=figures_.get(sid, {}).get("failing_url_kinds", []),
                check_failure_kinds=figures_.get(sid, {}).get("check_failure_kinds", []),
                check_days=CHECK_FAILURE_DAYS,
                uptime_counts=uptimes.get(sid, {}),
                computed_at=now,
            )
            for sid in ids
        ]
        fields = [
            "url_states",
            "failing_url_kinds",
            "check_failure_kinds",
            "check_days",
            "uptime_counts",
            "computed_at",
        ]
        ServerRollup.objects.bulk_create(
            rows, batch_size=1000, update_conflicts=True, unique_fields=["server"], update_fields=fields
        )
        ServerRollup.objects.filter(computed_at__lt=now).delete()
        return len(rows)


# --------------------------------------------------------------------------------------------------
# Beat's entry points (tasks/dashboard.py, manage.py dashboard_refresh)


def rollups_refresh() -> dict:
    """Every minute: the crawl's counts (and so a sample of its history), the check totals and the
    servers' figures."""
    crawl = figures_refresh(CRAWL_SUMMARY, crawl_summary_compute)
    crawl_samples_prune()
    totals = figures_refresh(CHECK_TOTALS, check_totals_compute)
    servers = server_rollups_refresh()
    return {
        "crawl_summary_s": None if crawl is None else round(crawl.seconds, 3),
        "check_totals_s": None if totals is None else round(totals.seconds, 3),
        "servers": servers,
    }


def dead_links_refresh(*, full: bool = False) -> dict:
    """Every five minutes: the broken-link record, from what changed since the previous run (`full`: from
    every link), and the per-site report."""
    done = figures_refresh(DEAD_LINKS, functools.partial(dead_links_compute, full=full))
    if done is None:
        return {"skipped": "another refresh is running"}
    return {
        "seconds": round(done.seconds, 3),
        "sites": len(done.data["sites"]),
        **{k: done.data.get(k) for k in ("removed", "changed", "urls")},
    }
