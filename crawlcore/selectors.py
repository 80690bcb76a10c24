"""Reads over the crawl's tables (no writes here)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from crawlcore.db import estimates, fulltext, partitions
from crawlcore.models import Link, Page, Server, ServerLease, StatusCheck, Url
from crawlcore.selectors_health import held_server_ids
from crawler import notfollowed
from crawler.lifecycle import State
from crawler.status import Category

_PARTITIONED_TTL = 300.0  # seconds: the table becomes partitioned by a migration, i.e. at a deploy
_partitioned: dict[str, tuple[float, bool]] = {}


def check_time_floor(at: datetime) -> datetime | None:
    """A lower bound on checked_at for a read of the checks at or after `at`: on a table partitioned by time,
    the first instant of the partition that holds `at`, so PostgreSQL leaves every older partition out of
    the plan and an index scan inside the others never meets a row the bound filters out; None on a plain
    table, where a bound would only be one more filter. Adding `checked_at >= floor` never hides a row at
    or after `at`, whatever partitions exist."""
    key = StatusCheck._meta.db_table
    seen = _partitioned.get(key)
    if seen is None or time.monotonic() - seen[0] > _PARTITIONED_TTL:
        seen = (time.monotonic(), partitions.is_partitioned(key))
        _partitioned[key] = seen
    return partitions.span_start(at, settings.CHECK_PARTITION_DAYS) if seen[1] else None


def _counts(qs, field: str) -> dict[str, int]:
    return {row[field]: row["n"] for row in qs.values(field).annotate(n=Count("id")).order_by(field)}


def due_count(*, now: datetime | None = None, wait: float = 0.0) -> int:
    """Init URLs due now: crawl_progress's `due`, alone (through url_due_idx). Those of servers held for more
    than `wait` seconds yet (their health: paused, backing off, down with no probe in that time) are not work
    a crawl waits for; counted apart, they are few."""
    now = now or timezone.now()
    due = Url.objects.filter(state=State.INIT.value, next_check_at__lte=now)
    n = due.count()
    if n:
        held = held_server_ids(now=now, beyond=wait)
        if held:
            n -= due.filter(server_id__in=held).count()
    return n


def pages_to_render():
    """Pages flagged for rendering (crawlcore.services.render), neither rendered nor given up: work in hand."""
    return Page.objects.filter(rendered_at__isnull=True, render_attempts__lt=settings.CRAWL_RENDER_ATTEMPTS).exclude(
        render_reason=""
    )


def crawl_progress(
    *, now: datetime | None = None, recheck_within: float = 0.0, count_leased: bool = True
) -> dict[str, int]:
    """The few numbers the crawl loop watches: it is finished when they are all 0.

    `rechecks`: NoResponse URLs whose back-off ends within `recheck_within` seconds (scan work in hand
    shows as leased). Neither `due` nor `rechecks` counts the URLs of a server held longer than that (its
    health: an operator's pause, a back-off, an outage whose next probe is later). Visited URLs due for an
    active re-check do not count: they are always coming due.
    `count_leased=False` leaves `leased` at 0 for a caller that counts it itself (the lease columns have
    no index: counting them reads the whole URL table).
    """
    now = now or timezone.now()
    failing = [State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value]
    # As the inactive sweep chooses them: it skips servers no longer crawled, so those are no work to wait for.
    rechecks = Url.objects.filter(state__in=failing, exclusion_reason="", server__enabled=True).filter(
        server__excluded_reason="", next_check_at__lte=now + timedelta(seconds=recheck_within)
    )
    held = held_server_ids(now=now, beyond=recheck_within)
    if held:
        rechecks = rechecks.exclude(server_id__in=held)
    return {
        "due": due_count(now=now, wait=recheck_within),
        "rechecks": rechecks.count(),
        "leased": Url.objects.exclude(lease_owner="").count() if count_leased else 0,
        "unextracted": Page.objects.filter(extracted_at__isnull=True).count(),
        # Pages whose full-text vector is still to be built (PostgreSQL; crawlcore.services.search_index).
        "unindexed": fulltext.pending_count(),
        "unrendered": pages_to_render().count(),
        "busy_servers": ServerLease.objects.exclude(owner="").values("server").distinct().count(),
    }


def check_category_counts(checks=None) -> dict[str, int]:
    """Status checks by category (every category present, 0 when none): of `checks`, a StatusCheck
    queryset, or of all of them. The dashboard adds up the same figures from its rollup and the newest
    rows, so both must count the same way."""
    categories = {c.value: 0 for c in Category}
    categories.update(_counts(StatusCheck.objects.all() if checks is None else checks, "category"))
    return categories


def crawl_summary(*, since: datetime | None = None, checks: bool = True, exact_sizes: bool = True) -> dict:
    """Counts by state (excluded URLs apart), exclusion reason, check category and failure kind.
    `checks=False` leaves the check counts out (the costliest part: the API takes them from a rollup).
    `exact_sizes=False` takes the numbers of pages and links from the database's estimate (crawlcore.db.
    estimates): counting the links, the largest table, reads all of it (seconds at a few million), too much
    for figures refreshed every minute; a crawl's own summary counts them."""
    # One pass over the URLs, grouped by everything the summary splits them by (a few dozen groups per site
    # of the crawl), the leased ones counted on the way.
    failing = {State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value}
    total, leased, states, excluded, kinds = 0, 0, {s.value: 0 for s in State}, Counter(), Counter()
    not_followed: dict[str, Counter] = {}
    groups = (
        Url.objects.values_list("state", "exclusion_reason", "failure_kind", "scope_root")
        .annotate(n=Count("id"), leased=Count("id", filter=~Q(lease_owner="")))
        .order_by()
    )
    for state, reason, kind, site, n, held in groups:
        total += n
        leased += held
        if reason:
            excluded[reason] += n
            not_followed.setdefault(site, Counter())[notfollowed.category(reason)] += n
        else:
            states[state] += n
        if state in failing:
            kinds[kind] += n
    out = {"urls": total, "states": states, "excluded": dict(sorted(excluded.items()))}
    if checks:
        counted = StatusCheck.objects.all() if since is None else StatusCheck.objects.filter(checked_at__gte=since)
        out["checks"] = check_category_counts(counted)
    return {
        **out,
        "not_followed": not_followed_by_site(not_followed),
        "failure_kinds": dict(sorted(kinds.items())),
        "servers": Server.objects.count(),
        "pages": Page.objects.count() if exact_sizes else estimates.table_rows(Page),
        "links": Link.objects.count() if exact_sizes else estimates.table_rows(Link),
        **crawl_progress(count_leased=False),
        "leased": leased,
    }


def not_followed_by_site(excluded: dict[str, Counter]) -> dict[str, dict[str, int]]:
    """Links not followed, per site (the host or registered domain of the seed they were found under) and
    reason (crawler.notfollowed.REASONS): `excluded`, the URLs set aside (counted in crawl_summary's pass),
    plus the Init URLs of servers set aside after they were found, and the pages that duplicate another
    page's content."""
    out = {site: Counter(counts) for site, counts in excluded.items()}
    # URLs known before their server was set aside (an alias found later, a private address, an operator):
    # never fetched, for the server's reason. The few servers set aside, each an index range of url_claim_idx.
    for server_id, reason in Server.objects.exclude(excluded_reason="").values_list("id", "excluded_reason"):
        held = (
            Url.objects.filter(server_id=server_id, state=State.INIT.value, exclusion_reason="")
            .values_list("scope_root")
            .annotate(n=Count("id"))
        )
        for site, n in held.order_by():
            out.setdefault(site, Counter())[notfollowed.category(reason)] += n
    dupes = Page.objects.filter(duplicate_of__isnull=False).values_list("url__scope_root").annotate(n=Count("id"))
    for site, n in dupes.order_by():
        out.setdefault(site, Counter())[notfollowed.DUPLICATE] += n
    return {site: dict(sorted(counts.items())) for site, counts in sorted(out.items())}


def load_profiles(*, server_ids: Sequence[int] | None = None) -> dict[int, list[float | None]]:
    """The servers' 24-hour load profiles (mean ms by hour of day), as the monitor last wrote them onto the
    server rows (hourly, on beat): what the load-aware and staleness schedulers read."""
    qs = Server.objects.filter(load_profile__isnull=False)
    if server_ids is not None:
        qs = qs.filter(id__in=list(server_ids))
    return dict(qs.values_list("id", "load_profile"))


def urls_orphaned(*, server_id: int, limit: int = 100) -> list[dict]:
    """A server's orphans: URLs its sitemaps list that no page of the crawl links to, with what
    the sitemap says of them, by URL. Their pages are fetched like any other; only a sitemap leads to them."""
    rows = (
        _orphans(server_id)
        .order_by("url")
        .values("id", "url", "state", "sitemap_lastmod", "sitemap_changefreq", "sitemap_priority")
    )
    return list(rows[:limit])


def urls_orphaned_count(*, server_id: int) -> int:
    return _orphans(server_id).count()


def _orphans(server_id: int):
    linked = Link.objects.filter(to_url_id=OuterRef("pk")).exclude(from_url_id=OuterRef("pk"))
    return Url.objects.filter(server_id=server_id, in_sitemap=True).exclude(Exists(linked))


def pages_duplicate(prefix: str = "") -> Q:
    """The pages whose content duplicates an earlier page (seed 003's page dedup), as a filter on Page (or,
    with `prefix` such as "page__", on a model that points to one). The extract agent marks a page with the
    earliest page of its checksum; a mark whose target has since changed its content no longer counts."""
    return Q(**{f"{prefix}duplicate_of__isnull": False, f"{prefix}duplicate_of__checksum": F(f"{prefix}checksum")})
