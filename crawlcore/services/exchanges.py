"""Exchanges kept for the archive where no Page row holds them (crawlcore.models.Exchange): redirects, 4xx
and 5xx answers, resource checks, robots.txt and sitemap fetches, each with the heads that went over the
wire and its body (bounded by CRAWL_MAX_BODY_BYTES as a page's is).

A stored page (2xx, by GET) keeps its exchange on its Page row, written by the same statement as the page,
and a 304 or an unchanged re-fetch becomes that page's revisit (crawlcore.services.scan.page_revisit): for
those nothing is written here, so the load path's plain pages cost no row more. Everything else a server
answered is one row, written with its status check (ServerVisit.record).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from crawlcore.models import Exchange
from crawler.http import FailureKind, FetchResult

# WARC-Truncated's words for a body the crawl did not keep whole.
_TRUNCATED = {
    FailureKind.TOO_LARGE: "length",
    FailureKind.BODY_TIMEOUT: "time",
    FailureKind.RESET: "disconnect",
    FailureKind.BAD_RESPONSE: "disconnect",
}
DROP_GROUP = 1000  # bodies dropped per statement


def held_by_page(result: FetchResult) -> bool:
    """Whether a URL's answer is kept on its Page row rather than here: a whole 2xx, or a 304 (a revisit)."""
    status = result.status or 0
    return (200 <= status < 300 and not result.incomplete) or status == 304


def archivable(result: FetchResult) -> bool:
    """An HTTP answer came, with a status a column can hold (a hostile one may send 0 or 65536)."""
    return result.status is not None and 100 <= result.status <= 999 and bool(result.response_head)


def exchange_of(result: FetchResult, *, server_id: int, url_id: int | None, kind: str, now: datetime) -> Exchange:
    body = result.body
    return Exchange(
        server_id=server_id,
        url_id=url_id,
        requested_url=result.url,
        kind=kind,
        method=result.method[:8],
        fetched_at=now,
        status=result.status,
        request_head=result.request_head,
        response_head=result.response_head,
        peer_ip=result.peer_ip,
        body_z=zlib.compress(body, 6) if body else b"",
        size=len(body),
        checksum=hashlib.sha1(body).hexdigest() if body else "",
        truncated=truncated_word(result),
    )


def truncated_word(result: FetchResult) -> str:
    """WARC-Truncated's word for a body the crawl did not keep whole, or ''."""
    return _TRUNCATED.get(result.failure, "") if result.failure else ""


def exchanges_store(
    *, results: Sequence[tuple[FetchResult, int | None]], server_id: int, kind: str = Exchange.PAGE
) -> int:
    """Keep the answers of `(result, url_id)` that are archivable, in one statement; how many."""
    now = timezone.now()
    rows = [
        exchange_of(result, server_id=server_id, url_id=url_id, kind=kind, now=now)
        for result, url_id in results
        if archivable(result)
    ]
    if rows:
        Exchange.objects.bulk_create(rows)
    return len(rows)


def exchanges_drop_bodies(*, now: datetime | None = None, days: float | None = None) -> int:
    """Drop the bodies of exchanges older than ARCHIVE_KEEP_ERROR_BODIES_DAYS (0: keep them); their heads,
    size and checksum stay, so an export still writes what was answered. How many were dropped."""
    days = settings.ARCHIVE_KEEP_ERROR_BODIES_DAYS if days is None else days
    if days <= 0:
        return 0
    now = now or timezone.now()
    old = Exchange.objects.filter(fetched_at__lt=now - timedelta(days=days), body_dropped_at__isnull=True, size__gt=0)
    old = old.exclude(kind=Exchange.MONITOR)  # an incident's evidence: its own retention removes it whole
    dropped = 0
    for _ in range(1_000_000):  # bounded: each round drops up to DROP_GROUP rows or ends
        ids = list(old.order_by("id").values_list("id", flat=True)[:DROP_GROUP])
        if not ids:
            break
        dropped += Exchange.objects.filter(id__in=ids).update(body_z=b"", body_dropped_at=now)
    return dropped
