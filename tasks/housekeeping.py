"""Beat jobs (queue `housekeeping`): the dispatcher, the reconciler, the status-check partitions, the
archive's retention of error bodies, the pages' full-text vectors."""

from __future__ import annotations

from celery import shared_task

from crawlcore.services.check_history import check_partitions_ensure
from crawlcore.services.exchanges import exchanges_drop_bodies
from crawlcore.services.extract import pages_text_fill
from crawlcore.services.job_tick import jobs_tick
from crawlcore.services.load_dispatch import dispatch_due, reconcile
from crawlcore.services.search_index import pages_index

from .retry import skip_without_database


@shared_task(name="tasks.housekeeping.dispatch")
def dispatch() -> int | None:
    return skip_without_database("dispatch", dispatch_due)


def _reconcile() -> dict:
    out = reconcile()
    return {
        "url_leases": out.url_leases,
        "server_leases": out.server_leases,
        "extracts": out.extracts,
        "checks": out.checks,
        "texts": pages_text_fill(),  # pages extracted before their text was kept, a few each time
    }


@shared_task(name="tasks.housekeeping.reconcile")
def reconcile_leases() -> dict | None:
    return skip_without_database("reconcile", _reconcile)


@shared_task(name="tasks.housekeeping.check_partitions")
def check_partitions() -> list[str] | None:
    return skip_without_database("check partitions", check_partitions_ensure)


@shared_task(name="tasks.housekeeping.drop_exchange_bodies")
def drop_exchange_bodies() -> int | None:
    return skip_without_database("drop archived error bodies", exchanges_drop_bodies)


@shared_task(name="tasks.housekeeping.jobs_tick")
def jobs_tick_task() -> dict | None:
    """Crawl jobs: scheduled starts, time windows, runs that have nothing left (crawlcore.services.job_tick)."""
    return skip_without_database("crawl jobs", jobs_tick)


def _search_index() -> dict:
    out = pages_index()
    return {"pages": out.pages, "batches": out.batches, "why": out.waited}


@shared_task(name="tasks.housekeeping.search_index")
def search_index() -> dict | None:
    """The vectors of pages stored with their index text, in bounded batches (crawlcore.services.search_index)."""
    return skip_without_database("search index", _search_index)
