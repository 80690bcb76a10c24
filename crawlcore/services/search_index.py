"""The pages' full-text vectors, built in batches apart from the extract agent (PostgreSQL).

The extract agent stores each page's text in index form with its row (crawlcore.db.fulltext); beat's
"crawladmin: search index" job sends `pages_index` every few seconds to the housekeeping queue, and it builds
the vectors of the pages waiting, at most SEARCH_INDEX_BATCH a statement, oldest first. A batch may wait to
grow while the promise allows: pages are indexed once the oldest of them has waited half of
SEARCH_INDEX_DELAY, or as soon as a full batch waits, or as soon as no page waits for extraction (nothing
more would join them: a crawl's last pages do not wait out the delay). So a stored page is searchable within
SEARCH_INDEX_DELAY of its extraction, as long as the housekeeping queue keeps up with beat.

On SQLite the extract agent writes the FTS5 rows in line: nothing ever waits, and a run does nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from crawlcore.db import fulltext
from crawlcore.models import Page

SEARCH_INDEX_BATCH = 1000  # pages a statement: one transaction's locks and its WAL stay bounded
# A run starts no batch past this, about beat's period: the next run goes on with what is left, and a run never
# holds a housekeeping thread (which the dispatcher shares) for long. Runs that overlap take different pages.
SEARCH_INDEX_BUDGET_S = 2.0


@dataclass
class IndexRun:
    pages: int = 0
    batches: int = 0
    waited: str = ""  # why the run indexed ("" when it left the pages to wait)


def index_due(*, now: datetime, batch: int, delay: float) -> str:
    """Why the waiting pages' vectors are to be built now ("" when they may wait for more to join them)."""
    oldest = fulltext.pending_oldest()
    if oldest is None:
        return ""
    _, extracted_at = oldest
    if extracted_at is None or extracted_at <= now - timedelta(seconds=delay / 2):
        return "delay"
    if fulltext.pending_count(at_most=batch) >= batch:
        return "full batch"
    if not Page.objects.filter(extracted_at__isnull=True).exists():  # page_unextracted_idx
        return "nothing being extracted"
    return ""


def pages_index(
    *,
    now: datetime | None = None,
    batch: int = SEARCH_INDEX_BATCH,
    budget_s: float = SEARCH_INDEX_BUDGET_S,
    force: bool = False,
) -> IndexRun:
    """Build the vectors of the pages waiting for them, when due (`force`: whatever waits), in statements
    of at most `batch` pages, until none waits or `budget_s` has passed. Each statement commits on its own."""
    run = IndexRun()
    run.waited = (
        "forced" if force else index_due(now=now or timezone.now(), batch=batch, delay=settings.SEARCH_INDEX_DELAY)
    )
    if not run.waited:
        return run
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        done = fulltext.index_pending(limit=batch)
        run.pages += done
        run.batches += 1
        if done < batch:
            break
    return run
