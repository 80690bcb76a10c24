"""What changed in the crawl since the link reports' last refresh, read from the crawl core's own records:
every move of a URL leaves a UrlEvent row (crawlcore.services.urls), and links are only ever added, each a
new Link row; both tables' ids grow as rows are written, so "since" is an id of each. A deleted URL leaves
no record: its breaks are found by the URL they name being gone."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, Max, OuterRef

from crawlcore.models import Link, Url, UrlEvent

from .models import LinkBreak

Mark = list  # [ISO time, newest UrlEvent id, newest Link id]


def rules() -> str:
    """The settings the record of breaks depends on: when they change, the next refresh recomputes it all."""
    return f"fragments={settings.CRAWL_CHECK_FRAGMENTS};redirects={settings.CRAWL_MAX_REDIRECTS}"


def newest_ids() -> tuple[int, int]:
    """The newest UrlEvent and Link ids now (0: none)."""
    return (
        UrlEvent.objects.aggregate(top=Max("id"))["top"] or 0,
        Link.objects.aggregate(top=Max("id"))["top"] or 0,
    )


def _at(mark: Mark) -> datetime:
    return datetime.fromisoformat(mark[0])


def read_from(marks: list[Mark], *, previous: datetime | None, window: timedelta) -> tuple[int, int]:
    """The ids to read on from (UrlEvent, Link): those of the newest mark taken `window` or more before the
    previous refresh (`previous`), since a row with an id at or below it had committed when that refresh
    looked; with no mark that old (the refresh before was the first, or only moments before), the oldest."""
    if not marks:
        return 0, 0
    ordered = sorted(marks, key=_at)
    old = [m for m in ordered if previous is not None and _at(m) <= previous - window]
    mark = old[-1] if old else ordered[0]
    return int(mark[1]), int(mark[2])


def marks_kept(marks: list[Mark], *, now: datetime, window: timedelta) -> list[Mark]:
    """The marks the next refresh may need (read_from with `previous=now`): the newest one at least `window`
    before now, and any newer."""
    ordered = sorted(marks, key=_at)
    old = [i for i, m in enumerate(ordered) if _at(m) <= now - window]
    return ordered[old[-1] :] if old else ordered


def moved_since(since: int):
    """The ids of the URLs that moved (a UrlEvent with an id after `since`), as a subquery: under a crawl
    every page fetched, tens of thousands between two refreshes, which the database semi-joins faster than
    it reads them back in IN (...) lists."""
    return UrlEvent.objects.filter(id__gt=since).values("url_id")


def breaks_of_deleted_urls() -> list[int]:
    """Open breaks whose page or target no longer exists (deleted with its server, or by an operator)."""
    # One NOT EXISTS a statement: PostgreSQL plans each as an anti-join, where NOT EXISTS … OR NOT EXISTS …
    # would probe the URL table once per open break.
    open_ = LinkBreak.objects.filter(fixed_at__isnull=True)
    gone: set[int] = set()
    for column in ("from_url_id", "to_url_id"):
        orphans = open_.filter(~Exists(Url.objects.filter(id=OuterRef(column))))
        gone.update(orphans.values_list("id", flat=True))
    return sorted(gone)
