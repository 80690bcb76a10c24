"""The URL-extract agent's work: parse stored pages, insert the new URLs and the links in bulk."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db.transactions import unflushed_commits
from crawlcore.models import Page
from crawler.parse import is_html
from crawler.pdf import is_pdf

from .extract_follow import FollowRules, Parsed, jobs_admission, link_targets, targets_known
from .extract_parse import parse_bounded, parse_pages
from .extract_read import StoredPage, stored_pages
from .extract_write import index_rows_of, link_rows_of, page_rows_of, record, record_limits, stored_text
from .load_dispatch import servers_dispatch_with_due_work
from .render import ExtractedPage, pages_render_flag
from .urls import urls_insert


@dataclass
class ExtractOutcome:
    pages: int = 0
    links: int = 0
    new_urls: int = 0


def pages_extract(*, page_ids: Sequence[int]) -> ExtractOutcome:
    """Extract a batch of pages in one transaction. Idempotent: links and URLs are inserted under unique
    constraints and a page already extracted is skipped, so a redelivered message does no harm.

    Every link is recorded, followed or not: a link not followed makes its target a URL set aside with
    the reason (never fetched), so a site owner can see why."""
    outcome = ExtractOutcome()
    indexing = settings.SEARCH_INDEX
    pages = stored_pages(page_ids, indexing=indexing)
    if not pages:
        return outcome
    parsed = parse_pages(pages)

    rules = FollowRules.from_settings()
    admission = jobs_admission(parsed, rules)
    looked_up = targets_known(parsed, rules)
    settled = {url for url, pk in looked_up.ids.items() if pk not in looked_up.liftable}
    new, followed = link_targets(parsed, rules, admission, settled)

    # The new URLs first, each statement committed on its own: an insert waits for any other transaction
    # inserting the same URL, so in one long transaction with the rest, extract tasks queued behind each
    # other for whole batches. A URL committed before its links is harmless: a redelivered
    # message finds it known, and the page stays unextracted until the links are written.
    # Their commits do not wait for the disk (unflushed_commits): a crash of PostgreSQL loses at most the last of
    # them, in order, so a page whose extraction was lost is unextracted again and the reconciler sends it again
    # (CRAWL_REDISPATCH_AFTER), and the URLs of a lost insert are inserted again then.
    with unflushed_commits():
        inserted = urls_insert(urls=list(new.values()), known=looked_up)
        ids = inserted.ids
        admission.record(ids)
        with transaction.atomic():
            # Only the URLs the lookup found set aside for a liftable reason are offered to the lift (usually
            # none): the guarded update probes every id it is given (hundreds a batch).
            depths = {ids[url]: depth for url, depth in followed.items() if ids.get(url) in inserted.liftable}
            link_rows = link_rows_of(parsed, ids)
            page_rows = page_rows_of(parsed)
            index_rows = index_rows_of(parsed, indexing=indexing)
            now = timezone.now()
            record_limits(parsed)
            lifted = record(depths, link_rows, page_rows, index_rows, now)
    # Pages that look built by JavaScript go to the render agent (its messages sent after this commit).
    pages_render_flag(pages=_render_candidates(parsed))
    # After the commit: the servers' guarded dispatch marks are not held locked through the broker's sends.
    servers_dispatch_with_due_work(server_ids=inserted.server_ids | lifted)
    outcome.pages, outcome.links, outcome.new_urls = len(pages), len(link_rows), len(looked_up.hashes)
    return outcome


def _render_candidates(parsed: Parsed) -> list[ExtractedPage]:
    """The batch's pages read from their raw bodies (a rendered one is not rendered again)."""
    return [
        ExtractedPage(page.id, page.url_id, page.body, page.content_type, ex.text, ex.urls, page.of_job)
        for page, ex in parsed
        if ex is not None and not page.dom_z and not ex.problem
    ]


TEXT_FILL_BATCH = 500
TEXT_FILL_BUDGET_S = 20.0  # a run stops starting new pages past this (each is bounded by CRAWL_PARSE_TIMEOUT)
TEXT_FILL_CHUNK = 25


def pages_text_fill(*, limit: int = TEXT_FILL_BATCH, budget_s: float = TEXT_FILL_BUDGET_S) -> int:
    """Keep the text of up to `limit` pages extracted without it (NULL: before Page.text was kept, or a type
    that is not parsed, whose text is ""), those that are parsed read again in the parse's child within its
    bounds: the search's snippets then come from it. Run with the reconciler, a bounded batch each time
    (page_text_missing_idx finds them), so an upgrade is never one long pass over every page. Returns the
    pages written."""
    rows = list(
        Page.objects.filter(extracted_at__isnull=False, text=None)
        .order_by("id")
        .values_list("id", "body_z", "content_type", "url__url")[:limit]
    )
    if not rows:
        return 0
    parsed = [row for row in rows if is_pdf(row[2]) or is_html(row[2] or None)]
    unparsed = [row[0] for row in rows if not (is_pdf(row[2]) or is_html(row[2] or None))]
    Page.objects.filter(id__in=unparsed, text=None).update(text="")
    end = time.monotonic() + budget_s
    written = len(unparsed)
    for i in range(0, len(parsed), TEXT_FILL_CHUNK):
        if time.monotonic() > end:
            break
        stored = [
            StoredPage(pk, 0, body_z, content_type or "", "", url, 0, "", "", 0, False, False, None)
            for pk, body_z, content_type, url in parsed[i : i + TEXT_FILL_CHUNK]
        ]
        results = parse_bounded(stored)
        with transaction.atomic():
            for page, result in zip(stored, results, strict=True):
                # A page that cannot be read within the bounds keeps an empty text: it is not tried again.
                text = stored_text(result.value if result.ok else None)
                Page.objects.filter(id=page.id, text=None).update(text=text)
        written += len(stored)
    return written
