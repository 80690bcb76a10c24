"""A batch's stored pages parsed, each in one of the parse's pooled processes within the parse's hard bounds
(time, memory): a page whatever it holds ends its parse there and the batch goes on. Also where byte-identical
PDFs of a batch are read once, and where a PDF already extracted is taken from what its first copy said."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from django.conf import settings
from django.utils import timezone

from crawlcore.models import Link, Page
from crawler.child import ChildResult
from crawler.child_pool import run_pooled
from crawler.parse import LIMIT_MEMORY, LIMIT_TIME, Extracted, Found
from crawler.pdf import is_pdf
from crawler.read import read_answer

from .extract_read import StoredPage

log = logging.getLogger(__name__)

# What the parse's processes run on each page (crawler.child_pool): (body_z, url, content type) -> Extracted. A
# name of the module so that a test can give the pool a reader that overruns on purpose.
READER = read_answer

# A page whose parse its child's hard bounds stopped (crawler.child's error -> the limit, the problem).
PARSE_STOPPED = {"timeout": (LIMIT_TIME, "parse_time"), "memory": (LIMIT_MEMORY, "parse_memory")}


def parse_pages(pages: list[StoredPage]) -> list[tuple[StoredPage, Extracted | None]]:
    """Each page parsed (None when the parser failed on it), in a pooled process (crawler.child_pool), each
    page within CRAWL_PARSE_TIMEOUT and CRAWL_PARSE_MEMORY_MB: whatever a page holds, its parse ends there and
    the page is classified over the bound (LIMIT_TIME, LIMIT_MEMORY), and the batch goes on.

    While a parse runs, this worker's thread is free: every quarter of CRAWL_REDISPATCH_AFTER it moves the
    pages' extract_dispatched_at on, however long one page takes, so the reconciler never takes a batch a
    live worker holds for lost (and never starts a second parse of it); once this worker is gone, its parse
    process ends with the page it holds (its own timer), and the batch is sent again. Before the first parse
    only a batch that waited in the queue more than half of CRAWL_REDISPATCH_AFTER says so: any other still
    has two beats (a quarter of it each) before the reconciler could take it, and the first beat moves it on.
    That write is a second update of every page it names (a new row version each), and in a crawl whose
    extraction lags its loading most batches wait a beat or more."""
    ids = [page.id for page in pages]

    def alive() -> None:
        Page.objects.filter(id__in=ids, extracted_at__isnull=True).update(extract_dispatched_at=timezone.now())

    if any(page.waited for page in pages):
        alive()
    known = _known_copies(pages)
    todo, same_as = _to_parse(pages, known)
    results = parse_bounded(todo, on_beat=alive)
    done: dict[int, Extracted | None] = dict(known)
    for page, result in zip(todo, results, strict=True):
        done[page.id] = _parse_outcome(page, result)
    for page_id, first_id in same_as.items():
        first = done[first_id]
        done[page_id] = dataclasses.replace(first) if first is not None else None
    return [(page, done[page.id]) for page in pages]


def parse_bounded(pages: Sequence[StoredPage], *, on_beat: Callable[[], None] | None = None) -> list[ChildResult]:
    """Each page read (READER: an HTML page or a PDF, crawler.read) in one of the parse's pooled processes
    (crawler.child_pool), each page within CRAWL_PARSE_TIMEOUT and CRAWL_PARSE_MEMORY_MB; `on_beat` every
    quarter of CRAWL_REDISPATCH_AFTER while it waits. The one way a stored answer is parsed, its rendered DOM
    (stored as HTML) included. The body goes as stored (zlib) and is inflated there, within the bounds."""
    return run_pooled(
        READER,
        [(_stored_bytes(page.dom_z or page.body_z), page.url, page.content_type) for page in pages],
        deadline_s=settings.CRAWL_PARSE_TIMEOUT,
        memory_bytes=settings.CRAWL_PARSE_MEMORY_MB * 1024 * 1024,
        beat_s=max(0.25, settings.CRAWL_REDISPATCH_AFTER / 4),
        on_beat=on_beat,
    )


def _stored_bytes(body_z: bytes | memoryview | None) -> bytes | None:
    # PostgreSQL's driver gives a bytea as a memoryview, which does not pickle.
    return bytes(body_z) if body_z is not None else None


def _parse_outcome(page: StoredPage, result: ChildResult) -> Extracted | None:
    if result.ok:
        return result.value
    stopped = PARSE_STOPPED.get("timeout" if result.timed_out else result.error)
    if stopped is not None:
        # Over the hard bound: nothing of the page is kept but the fact, and the page moves on (extracted).
        limit, problem = stopped
        return Extracted(base_url=page.url, limits=[limit], problem=problem)
    # A parser bug, or a child that died: the page is marked and logged, the batch goes on.
    log.error("extract failed for page %s (%s): %s", page.id, page.url[:200], result.error[:500])
    return None


def _to_parse(pages: list[StoredPage], known: dict[int, Extracted]) -> tuple[list[StoredPage], dict[int, int]]:
    """The pages to parse, and the PDFs of the batch that are byte for byte one parsed with them (page id ->
    that page's id): a PDF is read once a batch."""
    todo: list[StoredPage] = []
    same_as: dict[int, int] = {}
    first_of: dict[str, StoredPage] = {}
    for page in pages:
        if page.id in known:
            continue
        if page.checksum and is_pdf(page.content_type):
            first = first_of.setdefault(page.checksum, page)
            if first is not page:
                same_as[page.id] = first.id
                continue
        todo.append(page)
    return todo, same_as


def _known_copies(pages: list[StoredPage]) -> dict[int, Extracted]:
    """The PDFs of the batch whose bytes an earlier page already had extracted (same checksum): what that page
    said, its links read back from its link rows, instead of a second read. A PDF's read is the costly one
    (pure Python, up to crawler.pdf.MAX_SECONDS), and such a page is a duplicate anyway (extract_write.record). HTML is
    parsed again: it is cheap, and its relative links depend on its own URL."""
    pdfs = [page for page in pages if page.checksum and is_pdf(page.content_type)]
    if not pdfs:
        return {}
    originals: dict[str, tuple] = {}
    rows = (
        Page.objects.filter(checksum__in={page.checksum for page in pdfs}, extracted_at__isnull=False)
        .exclude(text=None)
        .order_by("id")
        .values_list("checksum", "id", "url_id", "title", "description", "text", "extract_problem")
    )
    for checksum, *row in rows:
        originals.setdefault(checksum, tuple(row))
    out: dict[int, Extracted] = {}
    links_of: dict[int, list[tuple]] = {}
    for page in pdfs:
        original = originals.get(page.checksum)
        if original is None or original[0] == page.id:
            continue
        _pk, url_id, title, description, text, problem = original
        if url_id not in links_of:
            links_of[url_id] = list(
                Link.objects.filter(from_url_id=url_id)
                .order_by("id")
                .values_list("to_url__url", "element", "anchor_text", "nofollow")
            )
        links = [Found(url, element, anchor, nofollow) for url, element, anchor, nofollow in links_of[url_id]]
        out[page.id] = Extracted(
            title=title, description=description, links=links, base_url=page.url, anchors=None, text=text,
            problem=problem,
        )  # fmt: skip
    return out
