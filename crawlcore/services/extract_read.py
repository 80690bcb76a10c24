"""The extract agent's one read of a batch: each page not extracted yet with what extraction needs of its
URL, in one fixed-shape statement. Kept apart from the parse and the writes because its shape is what makes
the batch cheap to read (prepared on PostgreSQL), and the text fill reads pages through the same record."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from crawlcore.db import fulltext
from crawlcore.db.raw import fetch_rows, one_of, typed
from crawlcore.models import JobUrl, Page, Url
from crawlcore.models.urls import page_body


@dataclass(frozen=True, slots=True)
class StoredPage:
    """What extraction reads of a page and its URL: one row of one query, no model instances."""

    id: int
    url_id: int
    body_z: bytes | None
    content_type: str
    checksum: str
    url: str
    depth: int
    scope_mode: str
    scope_root: str
    offsite_hops: int
    waited: bool  # its extract message was sent (or its parse said it is alive) over half CRAWL_REDISPATCH_AFTER ago
    of_job: bool  # a crawl job reached its URL: its links follow the jobs' rules (crawlcore.services.job_admission)
    inbound: str | None  # anchor texts of links to this page, for its index
    dom_z: bytes | None = None  # the DOM a browser rendered of it (crawlcore.services.render), when it has one

    @property
    def body(self) -> bytes:
        """What extraction reads: the rendered DOM when the page has one, else the body as fetched."""
        return page_body(self.dom_z) if self.dom_z else page_body(self.body_z)


def stored_pages(page_ids: Sequence[int], *, indexing: bool) -> list[StoredPage]:
    """The batch's pages not extracted yet, with what extraction reads of their URLs, whether a crawl job
    reached each URL and the anchor texts of the links to it: one fixed-shape statement (prepared on
    PostgreSQL). Built by the ORM each batch, the same read cost three times its own execution in Python."""
    page, url, job_url = Page._meta.db_table, Url._meta.db_table, JobUrl._meta.db_table
    ids, ids_param = one_of("p.id", page_ids, "bigint")
    since = timezone.now() - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER / 2)
    sql = (
        "SELECT p.id, p.url_id, p.body_z, p.content_type, p.checksum, u.url, u.depth, u.scope_mode, u.scope_root,"
        f" u.offsite_hops, p.extract_dispatched_at IS NULL OR p.extract_dispatched_at < {typed('timestamptz')},"
        f" EXISTS (SELECT 1 FROM {job_url} j WHERE j.url_id = p.url_id),"
        f" {fulltext.inbound_anchors_sql('p.url_id') if indexing else 'NULL'}, p.dom_z"
        f" FROM {page} p JOIN {url} u ON u.id = p.url_id WHERE {ids} AND p.extracted_at IS NULL"
    )
    rows = fetch_rows(sql, [since, ids_param], prepare=True)
    return [_rendered_as_html(StoredPage(*row[:10], bool(row[10]), bool(row[11]), row[12], row[13])) for row in rows]


def _rendered_as_html(page: StoredPage) -> StoredPage:
    # A rendered DOM is stored as UTF-8 HTML whatever the body's own type and charset said.
    return dataclasses.replace(page, content_type=RENDERED_TYPE) if page.dom_z else page


RENDERED_TYPE = "text/html; charset=utf-8"
