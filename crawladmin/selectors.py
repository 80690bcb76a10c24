"""Reads over the crawl's tables (no writes here)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count
from django.utils import timezone

from crawladmin.models import Link, Page, Server, ServerLease, StatusCheck, Url
from crawler.lifecycle import State
from crawler.status import Category


def _counts(qs, field: str) -> dict[str, int]:
    return {row[field]: row["n"] for row in qs.values(field).annotate(n=Count("id")).order_by(field)}


def crawl_progress(*, now: datetime | None = None, recheck_within: float = 0.0) -> dict[str, int]:
    """The few numbers the crawl loop watches: it is finished when they are all 0.

    `rechecks`: NoResponse URLs whose back-off ends within `recheck_within` seconds (scan work in hand
    shows as leased). Visited URLs due for an active re-check do not count: they are always coming due.
    """
    now = now or timezone.now()
    failing = [State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value]
    # As the inactive sweep chooses them: it skips servers no longer crawled, so those are no work to wait for.
    rechecks = Url.objects.filter(state__in=failing, exclusion_reason="", server__enabled=True).filter(
        server__excluded_reason="", next_check_at__lte=now + timedelta(seconds=recheck_within)
    )
    return {
        "due": Url.objects.filter(state=State.INIT.value, next_check_at__lte=now).count(),
        "rechecks": rechecks.count(),
        "leased": Url.objects.exclude(lease_owner="").count(),
        "unextracted": Page.objects.filter(extracted_at__isnull=True).count(),
        "busy_servers": ServerLease.objects.exclude(owner="").values("server").distinct().count(),
    }


def crawl_summary(*, since: datetime | None = None) -> dict:
    """Counts by state (excluded URLs apart), exclusion reason, check category and failure kind."""
    urls = Url.objects.all()
    excluded = urls.exclude(exclusion_reason="")
    states = {s.value: 0 for s in State}
    states.update(_counts(urls.filter(exclusion_reason=""), "state"))
    checks = StatusCheck.objects.all()
    if since is not None:
        checks = checks.filter(checked_at__gte=since)
    categories = {c.value: 0 for c in Category}
    categories.update(_counts(checks, "category"))
    failing = urls.filter(state__in=[State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value])
    return {
        "urls": urls.count(),
        "states": states,
        "excluded": _counts(excluded, "exclusion_reason"),
        "checks": categories,
        "failure_kinds": _counts(failing, "failure_kind"),
        "servers": Server.objects.count(),
        "pages": Page.objects.count(),
        "links": Link.objects.count(),
        **crawl_progress(),
    }
