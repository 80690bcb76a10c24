"""The URL-extract agent's work: parse stored pages, insert the new URLs and the links in bulk."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from crawlcore.db.bulk import insert_ignore, update_by_id
from crawlcore.models import Link, Page
from crawler.parse import extract

from .dispatch import servers_dispatch_with_due_work
from .urls import NewUrl, new_url_from, urls_insert

log = logging.getLogger(__name__)


@dataclass
class ExtractOutcome:
    pages: int = 0
    links: int = 0
    new_urls: int = 0


def pages_extract(*, page_ids: Sequence[int]) -> ExtractOutcome:
    """Extract a batch of pages in one transaction. Idempotent: links and URLs are inserted under unique
    constraints and a page already extracted is skipped, so a redelivered message does no harm."""
    outcome = ExtractOutcome()
    pages = list(Page.objects.filter(id__in=page_ids, extracted_at__isnull=True).select_related("url"))
    if not pages:
        return outcome
    parsed = []
    for page in pages:
        try:
            parsed.append((page, extract(page.body, page.url.url, content_type=page.content_type or None)))
        except Exception:  # a parser bug must not stop the batch: the page is marked and logged
            log.exception("extract failed for page %s (%s)", page.id, page.url.url)
            parsed.append((page, None))

    new: dict[str, NewUrl] = {}
    for page, ex in parsed:
        if ex is None or ex.nofollow:
            continue
        depth = page.url.depth + 1
        if depth > settings.CRAWL_MAX_DEPTH:
            continue
        for link in ex.links:
            if len(link) > settings.CRAWL_MAX_URL_LENGTH:
                continue
            if link not in new or new[link].depth > depth:
                new[link] = new_url_from(page.url, link, depth=depth)

    with transaction.atomic():
        inserted = urls_insert(urls=list(new.values()))
        ids = inserted.ids
        links = {
            (page.url_id, ids[link])
            for page, ex in parsed
            if ex is not None and not ex.nofollow
            for link in ex.links
            if link in ids and ids[link] != page.url_id
        }
        insert_ignore(Link._meta.db_table, ("from_url_id", "to_url_id"), sorted(links))
        now = timezone.now()
        update_by_id(
            Page._meta.db_table,
            (("title", "text"), ("description", "text"), ("extracted_at", "timestamptz")),
            [(page.id, ex.title if ex else "", ex.description if ex else "", now) for page, ex in parsed],
            where="t.extracted_at IS NULL",
        )
        _mark_duplicates(pages)
        servers_dispatch_with_due_work(server_ids=inserted.server_ids)
    outcome.pages, outcome.links, outcome.new_urls = len(pages), len(links), len(new)
    return outcome


def _mark_duplicates(pages: list[Page]) -> None:
    """A page whose body has the same checksum as an earlier page is a duplicate of the earliest one."""
    checksums = {p.checksum for p in pages if p.checksum}
    if not checksums:
        return
    firsts = dict(
        Page.objects.filter(checksum__in=checksums)
        .values("checksum")
        .annotate(first=Min("id"))
        .values_list("checksum", "first")
    )
    dupes = [(page.id, firsts[page.checksum]) for page in pages if firsts.get(page.checksum, page.id) != page.id]
    update_by_id(Page._meta.db_table, (("duplicate_of_id", "bigint"),), dupes)
