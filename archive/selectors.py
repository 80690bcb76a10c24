"""Reads for the archive: the stored pages to export, and the answers kept without a page (redirects, 4xx/5xx,
robots.txt, sitemaps), in id order and in chunks, as Capture values.

Memory stays bounded whatever the crawl's size: a chunk's rows are read without their bodies, and the
bodies then in groups of at most BODY_BUDGET bytes (Page.size), so one chunk of large pages can't load
gigabytes at once.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from django.db.models import Q

from crawlcore.models import Exchange as ExchangeRow
from crawlcore.models import Link, Page, StatusCheck, Url
from crawler.http import FailureKind
from crawler.urlnorm import canonicalize, url_hash

from .records import Capture, Exchange, Rendering, head_content_type

CHUNK = 500
BODY_BUDGET = 32 * 1024 * 1024


@dataclass(frozen=True)
class ExportScope:
    """Which pages an export takes: a server's host, a server group, pages fetched (or revisited) since."""

    site: str | None = None
    group: str | None = None
    since: datetime | None = None
    # Only incidents' evidence (the monitor's failing answers, exchanges of kind monitor) and, as pages, the
    # last good captures of their URLs (``page_ids``: incidents_scope finds them).
    incidents: bool = False
    page_ids: frozenset[int] | None = None

    def pages(self, prefix: str = "") -> Q:
        q = Q()
        if self.page_ids is not None:
            q &= Q(**{f"{prefix}id__in": sorted(self.page_ids)})
        if self.site:
            q &= Q(**{f"{prefix}url__server__host__iexact": self.site.strip("[]")})
        if self.group:
            q &= Q(**{f"{prefix}url__server__group": self.group})
        if self.since and self.page_ids is None:  # an incident's last good capture counts whatever its date
            q &= Q(**{f"{prefix}fetched_at__gte": self.since}) | Q(**{f"{prefix}revisit_at__gte": self.since})
        return q

    def exchanges(self) -> Q:
        """The answers kept without a page (crawlcore.models.Exchange) this export takes."""
        q = Q()
        if self.site:
            q &= Q(server__host__iexact=self.site.strip("[]"))
        if self.group:
            q &= Q(server__group=self.group)
        if self.since:
            q &= Q(fetched_at__gte=self.since)
        if self.incidents:
            q &= Q(kind=ExchangeRow.MONITOR)
        return q

    def holds_fetch(self, *, host: str, group: str, fetched_at: datetime, page_id: int | None = None) -> bool:
        """Whether a page's response record is part of this export (so a revisit may refer to it)."""
        return (
            (self.page_ids is None or page_id in self.page_ids)
            and (not self.site or host.lower() == self.site.strip("[]").lower())
            and (not self.group or group == self.group)
            and (not self.since or self.page_ids is not None or fetched_at >= self.since)
        )


_COLUMNS = (
    "id", "url_id", "url__url", "checksum", "content_type", "peer_ip", "url__failure_kind", "fetched_at",
    "request_head", "response_head", "revisit_at", "revisit_request_head", "revisit_response_head", "size",
    "duplicate_of_id",
)  # fmt: skip
_ORIGINAL = ("id", "checksum", "url__url", "fetched_at", "url__server__host", "url__server__group")


def incidents_scope(scope: ExportScope) -> ExportScope:
    """`scope` narrowed to incidents' evidence: the monitor's failing answers in it, and the stored pages of
    the same URLs (the last good capture of each, the crawl keeping one copy a URL) whatever their date."""
    urls = set(ExchangeRow.objects.filter(scope.exchanges() & Q(kind=ExchangeRow.MONITOR)).values_list(
        "requested_url", flat=True
    ).distinct())  # fmt: skip
    canonical = set()
    for url in urls:
        try:
            canonical.add(canonicalize(url))
        except Exception:  # noqa: BLE001 - a URL the crawl's rules refuse has no stored page
            continue
    ids: set[int] = set()
    hashes = sorted({url_hash(u) for u in canonical})
    for start in range(0, len(hashes), 1000):
        rows = Page.objects.filter(url__url_hash__in=hashes[start : start + 1000]).values_list("id", "url__url")
        ids |= {pk for pk, u in rows if u in canonical}
    return replace(scope, incidents=True, page_ids=frozenset(ids))


def pages_export_count(*, scope: ExportScope) -> int:
    return Page.objects.filter(scope.pages()).count()


def pages_export_chunks(*, scope: ExportScope, chunk: int = CHUNK) -> Iterator[list[Capture]]:
    """The pages in scope, in id order (an earlier duplicate's original comes first), `chunk` at a time."""
    last = 0
    while True:
        rows = list(Page.objects.filter(scope.pages(), id__gt=last).order_by("id").values_list(*_COLUMNS)[:chunk])
        if not rows:
            return
        last = rows[-1][0]
        bodies = _bodies(rows)
        links = _outlinks([row[1] for row in rows])
        originals = _originals({row[-1] for row in rows if row[-1] is not None})
        doms = _renderings([row[0] for row in rows])
        yield [
            dataclasses.replace(capture, rendered=doms.get(capture.page_id))
            if capture.page_id in doms
            else capture
            for capture in (
                _capture(dict(zip(_COLUMNS, row, strict=True)), bodies, links, originals, scope) for row in rows
            )
        ]


def _renderings(ids: list[int]) -> dict[int, Rendering]:
    """The chunk's rendered DOMs (crawlcore.services.render), by page id: few pages have one."""
    rows = Page.objects.filter(id__in=ids, dom_z__isnull=False, rendered_at__isnull=False).values_list(
        "id", "dom_z", "rendered_at", "render_reason"
    )
    return {pk: Rendering(at, zlib.decompress(bytes(z)), reason) for pk, z, at, reason in rows}


def _bodies(rows: list[tuple]) -> dict[int, bytes]:
    bodies: dict[int, bytes] = {}
    group: list[int] = []
    size = 0
    for row in rows:
        group.append(row[0])
        size += row[13] or 0
        if size >= BODY_BUDGET:
            bodies |= _read_bodies(group)
            group, size = [], 0
    return bodies | _read_bodies(group)


def _read_bodies(ids: list[int]) -> dict[int, bytes]:
    if not ids:
        return {}
    rows = Page.objects.filter(id__in=ids).values_list("id", "body_z")
    return {pk: zlib.decompress(bytes(z)) if z else b"" for pk, z in rows}


def _originals(ids: set[int]) -> dict[int, dict]:
    """The earlier pages the chunk's duplicates point at, by id: a query of their own, so the chunk's query
    stays a walk of the page table by id (joined through the duplicate, PostgreSQL chose to hash the whole
    table for every chunk)."""
    if not ids:
        return {}
    return {
        row[0]: dict(zip(_ORIGINAL, row, strict=True))
        for row in Page.objects.filter(id__in=ids).values_list(*_ORIGINAL)
    }


def _outlinks(url_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
    """Each page's outlinks, (target, why it was not followed or '') each."""
    out: dict[int, list[tuple[str, str]]] = defaultdict(list)
    rows = Link.objects.filter(from_url_id__in=url_ids).order_by("from_url_id", "to_url_id")
    for from_id, to, reason in rows.values_list("from_url_id", "to_url__url", "to_url__exclusion_reason"):
        out[from_id].append((to, reason))
    return out


def _not_followed(links: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(("not-followed", f"{to} {reason}") for to, reason in links if reason)


def _capture(
    r: dict,
    bodies: dict[int, bytes],
    links: dict[int, list[tuple[str, str]]],
    originals: dict[int, dict],
    scope: ExportScope,
) -> Capture:
    duplicate_of = None
    original = originals.get(r["duplicate_of_id"])
    # A revisit must point at a payload this export holds: the original's copy still has the same body and
    # falls within the export's scope (ids ascend, so it was written before this page).
    if (
        original is not None
        and r["checksum"]
        and original["checksum"] == r["checksum"]
        and original["id"] < r["id"]
        and scope.holds_fetch(
            host=original["url__server__host"],
            group=original["url__server__group"],
            fetched_at=original["fetched_at"],
            page_id=original["id"],
        )
    ):
        duplicate_of = (original["url__url"], original["fetched_at"])
    revisit = None
    if r["revisit_at"] is not None:
        revisit = Exchange(r["revisit_at"], r["revisit_request_head"], r["revisit_response_head"])
    return Capture(
        page_id=r["id"],
        url=r["url__url"],
        body=bodies[r["id"]],
        checksum=r["checksum"],
        content_type=r["content_type"],
        peer_ip=r["peer_ip"],
        truncated="length" if r["url__failure_kind"] == FailureKind.TOO_LARGE.value else "",
        fetch=Exchange(r["fetched_at"], r["request_head"], r["response_head"]),
        revisit=revisit,
        duplicate_of=duplicate_of,
        outlinks=tuple(to for to, _ in links.get(r["url_id"], ())),
        verdict=_not_followed(links.get(r["url_id"], [])),
    )


# -- answers kept without a page (crawlcore.models.Exchange) ------------------------------------------------
_EXCHANGE_COLUMNS = (
    "id", "url_id", "requested_url", "kind", "fetched_at", "status", "request_head", "response_head", "peer_ip",
    "size", "checksum", "truncated", "body_dropped_at", "url__state", "url__redirect_to", "url__failure_kind",
)  # fmt: skip


def exchanges_export_count(*, scope: ExportScope) -> int:
    return ExchangeRow.objects.filter(scope.exchanges()).count()


def exchanges_export_chunks(*, scope: ExportScope, chunk: int = CHUNK) -> Iterator[list[Capture]]:
    """The answers kept without a page in scope (redirects, 4xx/5xx, resources, robots.txt, sitemaps), in id
    order, `chunk` at a time, their bodies read in groups of at most BODY_BUDGET bytes."""
    last = 0
    columns = _EXCHANGE_COLUMNS
    while True:
        rows = list(
            ExchangeRow.objects.filter(scope.exchanges(), id__gt=last).order_by("id").values_list(*columns)[:chunk]
        )
        if not rows:
            return
        last = rows[-1][0]
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        bodies = _exchange_bodies(records)
        reasons = _target_reasons({r["url__redirect_to"] for r in records if r["url__redirect_to"]})
        yield [_exchange_capture(r, bodies.get(r["id"], b""), reasons) for r in records]


def _exchange_bodies(records: list[dict]) -> dict[int, bytes]:
    bodies: dict[int, bytes] = {}
    group: list[int] = []
    size = 0
    for r in records:
        if r["size"] and r["body_dropped_at"] is None:
            group.append(r["id"])
            size += r["size"]
        if size >= BODY_BUDGET:
            bodies |= _read_exchange_bodies(group)
            group, size = [], 0
    return bodies | _read_exchange_bodies(group)


def _read_exchange_bodies(ids: list[int]) -> dict[int, bytes]:
    if not ids:
        return {}
    rows = ExchangeRow.objects.filter(id__in=ids).values_list("id", "body_z")
    return {pk: zlib.decompress(bytes(z)) if z else b"" for pk, z in rows}


def _target_reasons(urls: set[str]) -> dict[str, str]:
    """Why each redirect target was not followed ('' when it was), by URL."""
    if not urls:
        return {}
    hashes = [url_hash(u) for u in urls]
    rows = Url.objects.filter(url_hash__in=hashes).values_list("url", "exclusion_reason")
    return {u: reason for u, reason in rows if u in urls}


def _exchange_capture(r: dict, body: bytes, reasons: dict[str, str]) -> Capture:
    dropped = r["body_dropped_at"] is not None and r["size"] > 0
    verdict: list[tuple[str, str]] = []
    if r["kind"] != ExchangeRow.PAGE:
        verdict.append(("fetched-as", r["kind"]))  # robots or sitemap: the crawl's own file, no URL row
    if r["url__redirect_to"] and 300 <= r["status"] < 400:
        target = r["url__redirect_to"]
        reason = reasons.get(target, "")
        verdict.append(("redirect", target) if not reason else ("not-followed", f"{target} {reason}"))
    if r["url__state"]:
        state = r["url__state"] + (f" ({r['url__failure_kind']})" if r["url__failure_kind"] else "")
        verdict.append(("state", state))
    if dropped:
        verdict.append(("body-dropped", r["body_dropped_at"].isoformat()))
    return Capture(
        page_id=r["id"],
        url=r["requested_url"],
        body=body,
        checksum="" if dropped else r["checksum"],
        content_type=head_content_type(r["response_head"]),
        peer_ip=r["peer_ip"],
        # Dropped by retention: what is left is not what was answered.
        truncated="unspecified" if dropped else r["truncated"],
        fetch=Exchange(r["fetched_at"], r["request_head"], r["response_head"]),
        revisit=None,
        duplicate_of=None,
        outlinks=(),
        verdict=tuple(verdict),
    )


# -- the crawl log -------------------------------------------------------------------------------------
_LOG_COLUMNS = (
    "checked_at", "status_code", "bytes", "method", "requested_url", "agent", "category", "latency_ms",
    "failure_kind",
)  # fmt: skip


def crawl_log_lines(*, scope: ExportScope, chunk: int = 2000) -> Iterator[str]:
    """The crawl's status checks in scope, one line each in the order they were begun, as a crawl log reads:
    time, status (`-` without an answer), bytes, method, URL, agent, category, milliseconds, failure kind.
    Checks still pending or given up as interrupted are no answer of a server: left out."""
    q = Q()
    if scope.site:
        q &= Q(server__host__iexact=scope.site.strip("[]"))
    if scope.group:
        q &= Q(server__group=scope.group)
    if scope.since:
        q &= Q(checked_at__gte=scope.since)
    rows = (
        StatusCheck.objects.filter(q)
        .exclude(category__in=StatusCheck.NOT_SERVER_ANSWERS)
        .order_by("id")
        .values_list(*_LOG_COLUMNS)
    )
    for at, status, size, method, url, agent, category, ms, failure in rows.iterator(chunk_size=chunk):
        stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        yield f"{stamp} {status or '-':>3} {size:>9} {method} {url} {agent} {category} {ms:.0f}ms {failure or '-'}\n"
