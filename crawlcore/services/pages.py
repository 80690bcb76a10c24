"""A fetched page as the page table keeps it: its row, and the one upsert that stores it or, when the URL
had a page, replaces it. What a re-fetch of the same body keeps (the exchange that brought the copy, what
extraction found, its rendering) is decided here, in that statement, so every writer of pages keeps it alike:
the load agent, alone or in its group's statement, and anything else that stores an answer as a page."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from crawlcore.db.bulk import upsert
from crawlcore.models import Page
from crawler.http import FetchResult
from crawler.parse import is_html
from crawler.pdf import is_pdf

PAGE_COLUMNS = (
    "url_id", "body_z", "content_type", "size", "checksum", "fetched_at", "extracted_at",
    "extract_dispatched_at", "title", "description", "duplicate_of_id", "request_head", "response_head",
    "peer_ip", "revisit_at", "revisit_request_head", "revisit_response_head",
)  # fmt: skip


def page_update() -> dict[str, str]:
    """A re-fetch whose body is the one already stored (same checksum) keeps the exchange that brought that
    copy and is kept beside it as its revisit, so the archive writes a response and a revisit record; a new
    body replaces the copy and forgets the old revisit. The same body of the same type also keeps what the
    extract agent found on it (or that it is still to do): it is not parsed again. In the same statement as
    the page, no read first."""
    table = Page._meta.db_table
    same = f"{table}.checksum = excluded.checksum AND excluded.checksum <> ''"
    kept = {c: f"CASE WHEN {same} THEN {table}.{c} ELSE excluded.{c} END" for c in _KEPT_ON_REVISIT}
    same_type = f"{same} AND {table}.content_type = excluded.content_type"
    kept |= {c: f"CASE WHEN {same_type} THEN {table}.{c} ELSE excluded.{c} END" for c in _KEPT_EXTRACTED}
    # A rendering belongs to the body it was made of: a new body is rendered again if it needs it.
    kept |= {c: f"CASE WHEN {same_type} THEN {table}.{c} ELSE {empty} END" for c, empty in _KEPT_RENDERED.items()}
    revisit = {
        f"revisit_{c}": f"CASE WHEN {same} THEN excluded.{c} ELSE excluded.revisit_{c} END"
        for c in ("request_head", "response_head")
    }
    return kept | revisit | {"revisit_at": f"CASE WHEN {same} THEN excluded.fetched_at ELSE NULL END"}


_KEPT_ON_REVISIT = ("fetched_at", "request_head", "response_head", "peer_ip")
_KEPT_EXTRACTED = ("extracted_at", "extract_dispatched_at", "title", "description", "duplicate_of_id")
_KEPT_RENDERED = {"dom_z": "NULL", "rendered_at": "NULL", "render_reason": "''", "render_problem": "''",
                  "render_attempts": "0"}  # fmt: skip


def page_row(url_id: int, result: FetchResult, checksum: str, *, now: datetime) -> tuple:
    """A URL's page as stored (in PAGE_COLUMNS' order): an HTML or PDF page is to be extracted."""
    content_type = result.headers.get("content-type", "")
    html = is_html(content_type or None) or is_pdf(content_type)
    row = (
        url_id, zlib.compress(result.body, 6), content_type[:200], len(result.body), checksum, now,
        # Nothing to extract from an image or another type: done at once.
        None if html else now, now if html else None,
        "", "", None,  # title, description, duplicate_of: the extract agent's, for this new copy
        result.request_head, result.response_head, result.peer_ip,
        None, "", "",  # no revisit of a new copy (page_update keeps the copy when the body is the same)
    )  # fmt: skip
    return row


def pages_store(fetched: Sequence[tuple[int, FetchResult, str]], *, now: datetime) -> list[int]:
    """Store (or replace) the pages of `(url_id, result, checksum)` in one statement; the ids of those
    to be extracted (HTML and PDF, not already extracted as this very body)."""
    rows = [page_row(url_id, result, checksum, now=now) for url_id, result, checksum in fetched]
    written = upsert(
        Page._meta.db_table, PAGE_COLUMNS, rows, key="url_id", returning="id, extracted_at", update=page_update()
    )
    return [page_id for page_id, extracted_at, _ in written if extracted_at is None]


def page_store(*, url_id: int, result: FetchResult, checksum: str, now: datetime | None = None) -> int | None:
    """`pages_store` of one page: its id when it is to be extracted (HTML, PDF)."""
    ids = pages_store([(url_id, result, checksum)], now=now or timezone.now())
    return ids[0] if ids else None
