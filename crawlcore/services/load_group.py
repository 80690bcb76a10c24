"""The load agent's group of plain pages fetched in a row, written in one statement: the checks' outcomes,
the URLs' guarded moves to Visited, their pages, and the answers of the resources among them kept for the
archive. One statement a group instead of several a page is most of what a load worker saves a page, so its
parts are built here together: a column of one is an input of the others."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from datetime import datetime

from django.db import connection, transaction

from crawlcore.db.chain import Const, Input, Insert, chain
from crawlcore.db.params import column_types
from crawlcore.models import Exchange, Page
from crawler.http import FetchResult
from crawler.lifecycle import Agent, Event, State

from .exchanges import archivable, truncated_word
from .pages import PAGE_COLUMNS, page_row, page_update
from .request_records import FINISHED, checks_finish_write
from .urls import MOVED, Claimed, Move, transition_writes
from .visit import ServerVisit

log = logging.getLogger(__name__)


def fetched_write(
    *,
    visit: ServerVisit,
    owner: str,
    fetched: list[tuple[Claimed, FetchResult]],
    checksums: dict[int, str],
    moves: list[Move],
    now: datetime,
) -> tuple[set[int], list[int]]:
    """LoadBatch.flush()'s writes as one chain (crawlcore.db.chain: one statement on PostgreSQL): the checks'
    outcomes, the guarded moves to Visited and their events, the pages of the URLs that moved (not of
    resources), the archived answers of the resources that moved. The moved ids and the ids of the pages
    to extract (HTML, PDF). A chain is one transaction of its own; inside a caller's transaction, a
    savepoint, so a refused value leaves that transaction usable. Checks whose intent row is gone are
    recorded after it, as ServerVisit.record() does."""
    check_columns, check_rows, finish = checks_finish_write(
        [(r.check_id, r, u.id) for u, r in fetched], begun_after=visit.opened_at
    )
    move_columns, move_rows, move_writes = transition_writes(
        moves=moves, expected=State.INIT, event=Event.FETCHED, agent=Agent.LOAD, owner=owner, now=now
    )
    page_columns = [(f"p_{c}", kind) for c, kind in column_types(Page, PAGE_COLUMNS)]
    page_rows = [  # a resource is checked, not kept
        (*page_row(url.id, result, checksums[url.id], now=now), not url.resource) for url, result in fetched
    ]
    resources = ResourceAnswers(fetched, server_id=visit.server.id)
    store = Insert(
        "stored_pages",
        Page._meta.db_table,
        values={c: f"p_{c}" for c in PAGE_COLUMNS},
        after=(MOVED, "u_id"),
        where="p_keep",
        conflict="url_id",
        update=page_update(),
        returning=("id", "extracted_at"),
    )
    with transaction.atomic() if connection.in_atomic_block else nullcontext():
        given = Input(
            [*check_columns, *move_columns, *page_columns, ("p_keep", "boolean"), *resources.columns],
            [(*c, *m, *p, *r) for c, m, p, r in zip(check_rows, move_rows, page_rows, resources.rows, strict=True)],
        )
        out = chain({"v": given}, [finish, *move_writes, store, *resources.writes])
    finished = {check_id for (check_id,) in out[FINISHED]}
    for url, result in fetched:
        if result.check_id not in finished:
            visit.record(result, url.id)
    moved = {url_id for (url_id,) in out[MOVED]}
    for move in moves:
        if move.url_id not in moved:
            log.info("url %s: not in %s under %s any more; another agent got there first", move.url_id,
                     State.INIT, owner)  # fmt: skip
    return moved, [page_id for page_id, extracted_at in out["stored_pages"] if extracted_at is None]


class ResourceAnswers:
    """A group's resources' answers kept for the archive as exchanges (crawlcore.services.exchanges), in the
    group's one statement: an INSERT of those whose URL moved, over the page columns each row already
    carries (the body, its size and checksum, the heads) and a few of its own (`e_`). A group of pages only,
    the usual one, has no such write: its statement is the same as without the archive."""

    def __init__(self, fetched: list[tuple[Claimed, FetchResult]], *, server_id: int) -> None:
        keep = [url.resource and archivable(result) for url, result in fetched]
        self.columns: list[tuple[str, str]] = []
        self.rows: list[tuple] = [() for _ in fetched]
        self.writes: list[Insert] = []
        if not any(keep):
            return
        self.columns = [("e_keep", "boolean"), ("e_url", "text"), ("e_method", "text"), ("e_status", "integer"),
                        ("e_truncated", "text")]  # fmt: skip
        self.rows = [
            (k, r.url, r.method[:8], r.status if k else None, truncated_word(r))
            for k, (_, r) in zip(keep, fetched, strict=True)
        ]
        values = {
            "server_id": Const(server_id, "bigint"), "url_id": "p_url_id", "requested_url": "e_url",
            "kind": Const(Exchange.PAGE, "text"), "method": "e_method", "fetched_at": "p_fetched_at",
            "status": "e_status", "request_head": "p_request_head", "response_head": "p_response_head",
            "peer_ip": "p_peer_ip", "body_z": "p_body_z", "size": "p_size", "checksum": "p_checksum",
            "truncated": "e_truncated",
        }  # fmt: skip
        self.writes = [Insert("kept_answers", Exchange._meta.db_table, values=values, after=(MOVED, "u_id"),
                              where="e_keep")]  # fmt: skip
