"""Recording status checks: every request the crawler makes becomes exactly one StatusCheck row.

In two steps, so that neither a killed worker nor a lost database connection can lose a request from
the record, nor record one twice:

1. ``check_begin`` inserts the row in category ``pending`` and COMMITS it, before the request is sent
   (``checks_begin`` does it for the requests a load visit sends within the next second, in one statement;
   the visit discards those it does not send);
2. ``check_finish`` writes the outcome over it, inside the caller's transaction (the same commit as
   the URL's move along the life-cycle).

A worker killed between the two leaves the row pending; ``checks_interrupt_stale`` (run by the
reconciler) finishes it as ``interrupted`` once no request can still be running: our side failed,
not the server, so those rows stay out of the servers' statistics. The one gap left is a kill between
the intent's commit and the send (microseconds): a row for a request that never went out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from crawlcore.db.bulk import insert_unsynced_many
from crawlcore.db.chain import Const, Update
from crawlcore.models import StatusCheck
from crawler.http import FetchResult
from crawler.lifecycle import Agent
from crawler.status import categorize

INTERRUPTED_KIND = "interrupted"
# After its per-request deadline a request has ended one way or the other; the margin covers DNS (not
# under the fetcher's deadlines) and the commit that records the outcome.
PENDING_MARGIN_SECONDS = 30.0
# How far a write of outcomes looks beyond the times its intents can have been begun at (checks_finish_write):
# a step of the machine's clock between an intent and its outcome must not hide the intent row.
CLOCK_MARGIN = timedelta(minutes=10)


def request_deadline_seconds() -> float:
    """The longest a request can take: the fetcher's absolute connect, header and body deadlines."""
    return settings.CRAWL_CONNECT_TIMEOUT + settings.CRAWL_HEADER_TIMEOUT + settings.CRAWL_BODY_TIMEOUT


def check_begin(*, server_id: int, requested_url: str, method: str, agent: Agent) -> int:
    """The intent row of a request about to be sent, committed at once; its id (checks_begin of one)."""
    return checks_begin(server_id=server_id, requests=[(requested_url, method)], agent=agent)[(requested_url, method)]


def checks_begin(*, server_id: int, requests: Sequence[tuple[str, str]], agent: Agent) -> dict[tuple[str, str], int]:
    """check_begin for the next requests of a visit, `(url, method)` each (distinct URLs), in one statement:
    their intent ids.

    Committed before the first of them goes out, so each request is on the record before it is sent; never
    inside a caller's transaction, which a kill or a lost connection would roll back together with the only
    trace of a request the server did receive (RuntimeError, as for a durable atomic block). Committed
    without waiting for the WAL flush on PostgreSQL (crawlcore.db.bulk.insert_unsynced_many): only a crash
    of PostgreSQL itself within a fraction of a second could lose them, and the outcome's own commit, which
    does wait, flushes them too. The intents of requests that are not sent after all (the batch stopped, robots.txt
    excluded the URL) are discarded when the visit closes (checks_discard); only a worker killed meanwhile
    leaves some behind, which the reconciler finishes as interrupted like any pending row: never counted
    as something a server did. One statement and one commit for a group instead of one a request."""
    blocks = connection.atomic_blocks
    if blocks and not getattr(blocks[-1], "_from_testcase", False):
        raise RuntimeError(
            "a status check's intent must be committed on its own, not inside a durable-less transaction"
        )
    now = timezone.now()
    columns = (
        ("requested_url", "text"), ("method", "text"), ("server_id", "bigint"), ("checked_at", "timestamptz"),
        ("category", "text"), ("latency_ms", "double precision"), ("agent", "text"), ("crawler_num", "integer"),
        ("failure_kind", "text"), ("detail", "text"), ("bytes", "integer"),
    )  # fmt: skip
    rows = [
        (url, method, server_id, now, StatusCheck.PENDING, 0.0, agent.value, settings.CRAWLER_NUM, "", "", 0)
        for url, method in requests
    ]
    ids = dict((url, check_id) for check_id, url in insert_unsynced_many(StatusCheck, columns, rows))
    return {(url, method): ids[url] for url, method in requests}


def check_discard(*, check_id: int) -> None:
    """No request went out after all (the private-address guard refused it): no check either."""
    StatusCheck.objects.filter(id=check_id, category=StatusCheck.PENDING).delete()


def checks_discard(*, check_ids: Sequence[int]) -> None:
    """Intents of requests that were never sent (checks_begin): no request, no check."""
    if check_ids:
        StatusCheck.objects.filter(id__in=list(check_ids), category=StatusCheck.PENDING).delete()


def _outcome(result: FetchResult) -> dict:
    t = result.timings
    return dict(
        checked_at=timezone.now(),
        status_code=result.status,
        # A response whose body never arrived whole is a disconnect, whatever its status line said.
        category=categorize(
            None if result.incomplete else result.status, t.total_ms / 1000.0, settings.CRAWL_DELAY_THRESHOLD
        ).value,
        failure_kind=result.failure.value if result.failure else "",
        detail=result.detail[:300],
        latency_ms=t.total_ms,
        dns_ms=t.dns_ms,
        connect_ms=t.connect_ms,
        first_byte_ms=t.first_byte_ms,
        body_ms=t.body_ms,
        bytes=result.bytes_received,
    )


# The outcome's columns in _outcome()'s order, with their PostgreSQL types (checks_finish_write's chain input).
_OUTCOME_COLUMNS = (
    ("url_id", "bigint"),
    ("checked_at", "timestamptz"),
    ("status_code", "integer"),
    ("category", "text"),
    ("failure_kind", "text"),
    ("detail", "text"),
    ("latency_ms", "double precision"),
    ("dns_ms", "double precision"),
    ("connect_ms", "double precision"),
    ("first_byte_ms", "double precision"),
    ("body_ms", "double precision"),
    ("bytes", "integer"),
)


FINISHED = "finished_checks"  # the chain write of checks_finish_write, returning the check ids written


def checks_finish_write(
    outcomes: Sequence[tuple[int | None, FetchResult, int | None]], *, begun_after: datetime | None = None
) -> tuple[list[tuple[str, str]], list[tuple], Update]:
    """check_finish of many requests, `(check_id, result, url_id)` each, as one write of a crawlcore.db.chain:
    its input columns (prefixed `c_`), one row per outcome in order, and the UPDATE (named FINISHED). The
    caller records the checks it did not return (their row is gone, or they had none).

    `begun_after`: a time before every one of these intents was begun (their visit's opening). The intent
    rows are then looked for only in the partitions from it to now (give or take CLOCK_MARGIN), not in
    every day's partition of the table (each planned and scanned for each write)."""
    columns = [("c_id", "bigint"), *((f"c_{name}", kind) for name, kind in _OUTCOME_COLUMNS)]
    rows = []
    for check_id, result, url_id in outcomes:
        values = _outcome(result)
        rows.append((check_id, url_id, *(values[name] for name, _ in _OUTCOME_COLUMNS[1:])))
    within = None
    if begun_after is not None:
        low, high = begun_after - CLOCK_MARGIN, timezone.now() + CLOCK_MARGIN
        within = ("checked_at", Const(low, "timestamptz"), Const(high, "timestamptz"))
    table = StatusCheck._meta.db_table
    write = Update(FINISHED, table, key="c_id", set={n: f"c_{n}" for n, _ in _OUTCOME_COLUMNS}, within=within)
    return columns, rows, write


def check_finish(*, check_id: int, result: FetchResult, url_id: int | None) -> bool:
    """Write a request's outcome over its intent row; False if the row is gone. Unguarded on purpose: an
    outcome that arrives after the reconciler gave the row up as interrupted is still the truth."""
    return StatusCheck.objects.filter(id=check_id).update(url_id=url_id, **_outcome(result)) == 1


def check_record(*, result: FetchResult, server_id: int, url_id: int | None, agent: Agent) -> StatusCheck:
    """One finished request in one step: for results that did not come through ``check_begin``."""
    return StatusCheck.objects.create(
        url_id=url_id,
        server_id=server_id,
        requested_url=result.url,
        method=result.method,
        agent=agent.value,
        crawler_num=settings.CRAWLER_NUM,
        **_outcome(result),
    )


def checks_interrupt_stale(*, now: datetime | None = None) -> int:
    """Finish the intent rows whose request can no longer be running: their worker was killed or lost
    the database between the request and its record. Returns how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=request_deadline_seconds() + PENDING_MARGIN_SECONDS)
    return StatusCheck.objects.filter(category=StatusCheck.PENDING, checked_at__lt=cutoff).update(
        category=StatusCheck.INTERRUPTED,
        failure_kind=INTERRUPTED_KIND,
        detail="no outcome recorded: the worker or its database connection went away during the request",
    )
