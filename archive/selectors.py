"""Reads for the archive: the stored pages to export, in id order and in chunks, as Capture values.

Memory stays bounded whatever the crawl's size: a chunk's rows are read without their bodies, and the
bodies then in groups of at most BODY_BUDGET bytes (Page.size), so one chunk of large pages can't load
gigabytes at once.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from crawlcore.models import Link, Page
from crawler.fetch import FailureKind

from .records import Capture, Exchange

CHUNK = 500
BODY_BUDGET = 32 * 1024 * 1024


@dataclass(frozen=True)
class ExportScope:
    """Which pages an export takes: a server's host, a server group, pages fetched (or revisited) since."""

    site: str | None = None
    group: str | None = None
    since: datetime | None = None

    def pages(self, prefix: str = "") -> Q:
        q = Q()
        if self.site:
            q &= Q(**{f"{prefix}url__server__host__iexact": self.site.strip("[]")})
        if self.group:
            q &= Q(**{f"{prefix}url__server__group": self.group})
        if self.since:
            q &= Q(**{f"{prefix}fetched_at__gte": self.since}) | Q(**{f"{prefix}revisit_at__gte": self.since})
        return q

    def holds_fetch(self, *, host: str, group: str, fetched_at: datetime) -> bool:
        """Whether a page's response record is part of this export (so a revisit may refer to it)."""
        return (
            (not self.site or host.lower() == self.site.strip("[]").lower())
            and (not self.group or group == self.group)
            and (not self.since or fetched_at >= self.since)
        )


_COLUMNS = (
    "id", "url_id", "url__url", "checksum", "content_type", "peer_ip", "url__failure_kind", "fetched_at",
    "request_head", "response_head", "revisit_at", "revisit_request_head", "revisit_response_head", "size",
    "duplicate_of_id",
)  # fmt: skip
_ORIGINAL = ("id", "checksum", "url__url", "fetched_at", "url__server__host", "url__server__group")


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
        yield [_capture(dict(zip(_COLUMNS, row, strict=True)), bodies, links, originals, scope) for row in rows]


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


def _outlinks(url_ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    rows = Link.objects.filter(from_url_id__in=url_ids).order_by("from_url_id", "to_url_id")
    for from_id, to in rows.values_list("from_url_id", "to_url__url"):
        out[from_id].append(to)
    return out


def _capture(
    r: dict, bodies: dict[int, bytes], links: dict[int, list[str]], originals: dict[int, dict], scope: ExportScope
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
        truncated=r["url__failure_kind"] == FailureKind.TOO_LARGE.value,
        fetch=Exchange(r["fetched_at"], r["request_head"], r["response_head"]),
        revisit=revisit,
        duplicate_of=duplicate_of,
        outlinks=tuple(links.get(r["url_id"], ())),
    )
