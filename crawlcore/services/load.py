"""The HTML-load agent's work for one server: claim a batch of Init URLs, fetch them politely, store
what came back, move each URL along the life-cycle, and hand HTML pages to the extract agent.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db.bulk import update_by_id, upsert
from crawlcore.models import Link, Page, Server, Url, UrlEvent
from crawler.fetch import FailureKind, FetchResult
from crawler.lifecycle import Agent, Event, State, event_for_fetch, next_state
from crawler.parse import is_html
from crawler.urlnorm import UrlError, canonicalize

from .queue import enqueue_extract_on_commit, enqueue_load_on_commit
from .servers import server_merge_if_alias
from .urls import Claimed, new_url_from, url_exclude, url_transition, urls_claim, urls_insert, urls_release
from .visit import Gate, ServerVisit

log = logging.getLogger(__name__)

EXTRACT_GROUP = 10  # pages per extract message: fewer messages, still prompt extraction
STORE_GROUP = 10  # plain pages (2xx, not a home page) written per transaction: a few statements, not ~10 each


@dataclass
class LoadOutcome:
    fetched: int = 0
    failed: int = 0
    excluded: int = 0
    backed_off: bool = False
    server_excluded: str = ""
    page_ids: list[int] = field(default_factory=list)


def response_fields(result: FetchResult) -> dict:
    """What a response tells about a URL, stored on its row (the scans compare against it)."""
    h = result.headers
    return dict(
        last_status=result.status,
        last_modified=h.get("last-modified", "")[:100],
        etag=h.get("etag", "")[:200],
        content_length=_int_or_none(h.get("content-length")),
    )


def failure_of(result: FetchResult) -> str:
    return result.failure.value if result.failure else FailureKind.HTTP_STATUS.value


# A URL's row once its page is fetched (url_transition's fields for a plain 2xx page), for update_by_id.
_VISITED_COLUMNS = (
    ("state", "text"),
    ("lease_owner", "text"),
    ("lease_expires_at", "timestamptz"),
    ("last_checked_at", "timestamptz"),
    ("last_status", "integer"),
    ("last_modified", "text"),
    ("etag", "text"),
    ("content_length", "bigint"),
    ("checksum", "text"),
    ("failure_kind", "text"),
    ("failure_count", "integer"),
    ("redirect_to", "text"),
    ("next_check_at", "timestamptz"),
)


def _visited_values(result: FetchResult, checksum: str, state: str, now) -> tuple:
    f = response_fields(result)
    return (
        state, "", None, now, f["last_status"], f["last_modified"], f["etag"], f["content_length"],
        checksum, result.failure.value if result.failure else "", 0, "", None,
    )  # fmt: skip


class LoadBatch:
    """The load agent's side of a server visit: what to do with each response."""

    def __init__(self, visit: ServerVisit, urls: list[Claimed]):
        self.visit = visit
        self.owner = visit.owner
        self.outcome = LoadOutcome()
        self.pending = {u.id for u in urls}  # leased by us, no outcome written yet
        self.fetched: list[tuple[Claimed, FetchResult]] = []  # plain pages waiting for flush()
        self.home = f"{visit.server.origin}/"

    def fetch_one(self, url: Claimed) -> bool:
        """Fetch and record one URL. False when the batch must stop (server backs off or is excluded)."""
        result = self.visit.fetch(url.url)
        if result.failure == FailureKind.FORBIDDEN_ADDRESS:
            self.exclude_server(f"private address: {result.detail}")
            return False
        event = event_for_fetch(result.status, has_retry_after="retry-after" in result.headers)
        if event == Event.FETCHED and result.incomplete:
            # Headers without the whole body (body timeout, reset, bad gzip) is no valid response (§4).
            event = Event.NO_RESPONSE
        if event is None:
            self.visit.record(result, url.id)
            until = self.visit.back_off(result)
            urls_release(ids=[url.id], owner=self.owner, next_check_at=until)
            self.pending.discard(url.id)
            self.outcome.backed_off = True
            return False
        if event == Event.FETCHED and 200 <= (result.status or 0) < 300 and url.url != self.home:
            self.fetched.append((url, result))
            if len(self.fetched) >= STORE_GROUP:
                self.flush()
            return True
        self.pending.discard(url.id)
        with transaction.atomic():
            self.visit.record(result, url.id)
            # A savepoint: when another agent got there first, _store undoes our move, not the check's outcome.
            with transaction.atomic():
                if event == Event.FETCHED:
                    self._store(url, result)
                else:
                    self._fail(url, result, event)
        return not self.outcome.server_excluded

    def flush(self) -> None:
        """Write the plain pages fetched so far in one transaction: their checks, their URLs' moves to
        Visited (guarded like url_transition: still Init, still ours), the moves' events, the pages."""
        fetched, self.fetched = self.fetched, []
        if not fetched:
            return
        now = timezone.now()
        new_state = next_state(State.INIT, Event.FETCHED, Agent.LOAD).value
        checksums = {url.id: hashlib.sha1(result.body).hexdigest() if result.body else "" for url, result in fetched}
        with transaction.atomic():
            self.visit.record_many([(result, url.id) for url, result in fetched])
            moved = set(
                update_by_id(
                    Url._meta.db_table,
                    _VISITED_COLUMNS,
                    [
                        (
                            url.id,
                            *_visited_values(result, checksums[url.id], new_state, now),
                            State.INIT.value,
                            self.owner,
                        )
                        for url, result in fetched
                    ],
                    guards=(("state", "text"), ("lease_owner", "text")),
                )
            )
            done = [(url, result) for url, result in fetched if url.id in moved]
            UrlEvent.objects.bulk_create(
                [
                    UrlEvent(
                        url_id=url.id,
                        from_state=State.INIT.value,
                        to_state=new_state,
                        agent=Agent.LOAD.value,
                        crawler_num=settings.CRAWLER_NUM,
                        at=now,
                        http_status=result.status,
                        latency_ms=result.timings.total_ms,
                    )
                    for url, result in done
                ]
            )
            page_ids = pages_store([(url.id, result, checksums[url.id]) for url, result in done], now=now)
        self.pending.difference_update(url.id for url, _ in fetched)
        self.outcome.fetched += len(done)
        self.outcome.page_ids.extend(page_ids)

    def _store(self, url: Claimed, result: FetchResult) -> None:
        body = result.body
        checksum = hashlib.sha1(body).hexdigest() if body else ""
        redirect_to, failure = "", result.failure.value if result.failure else ""
        location = result.headers.get("location")
        if result.status is not None and 300 <= result.status < 400 and location:
            redirect_to, failure = self._follow_redirect(url, location, failure)
        moved = url_transition(
            url_id=url.id,
            expected=State.INIT,
            event=Event.FETCHED,
            agent=Agent.LOAD,
            owner=self.owner,
            http_status=result.status,
            latency_ms=result.timings.total_ms,
            checksum=checksum,
            failure_kind=failure,
            failure_count=0,
            redirect_to=redirect_to,
            next_check_at=None,
            **response_fields(result),
        )
        if not moved:
            transaction.set_rollback(True)  # someone else owns it now: keep their result, not ours
            return
        self.outcome.fetched += 1
        if result.status is not None and 200 <= result.status < 300:
            page_id = page_store(url_id=url.id, result=result, checksum=checksum)
            if page_id is not None:
                self.outcome.page_ids.append(page_id)
            if url.url == f"{self.visit.server.origin}/":
                alias = server_merge_if_alias(server=self.visit.server, home_checksum=checksum)
                if alias is not None and alias.id == self.visit.server.id:
                    self.outcome.server_excluded = f"alias of {alias.alias_of}"

    def _follow_redirect(self, url: Claimed, location: str, failure: str) -> tuple[str, str]:
        """Record a redirect and queue its target as a new URL (not followed inline: the target may be
        another server, with its own politeness). Loops end by themselves: a known URL is not re-added."""
        try:
            target = canonicalize(location, base=url.url)
        except UrlError as exc:
            return "", f"bad_redirect_{exc.reason}"[:32]
        if url.redirect_hops + 1 > settings.CRAWL_MAX_REDIRECTS:
            return target, FailureKind.TOO_MANY_REDIRECTS.value
        new = new_url_from(url, target, depth=url.depth, redirect_hops=url.redirect_hops + 1)
        ids = urls_insert(urls=[new]).ids
        if target in ids and ids[target] != url.id:
            Link.objects.bulk_create([Link(from_url_id=url.id, to_url_id=ids[target])], ignore_conflicts=True)
        return target, failure

    def _fail(self, url: Claimed, result: FetchResult, event: Event) -> None:
        final = event == Event.GONE
        moved = url_transition(
            url_id=url.id,
            expected=State.INIT,
            event=event,
            agent=Agent.LOAD,
            owner=self.owner,
            http_status=result.status,
            latency_ms=result.timings.total_ms,
            reason=result.detail,
            last_status=result.status,
            failure_kind=failure_of(result),
            failure_count=url.failure_count + 1,
            next_check_at=None if final else timezone.now() + timedelta(seconds=settings.CRAWL_NR1_BACKOFF),
        )
        if moved:
            self.outcome.failed += 1

    def fail_unanswered(self, urls: list[Claimed], result: FetchResult) -> None:
        """robots.txt did not answer: the server's URLs are not responding either. No request is made
        for them (each would wait out the same timeout); each moves to NoResponse1 with the reason."""
        for url in urls:
            with transaction.atomic():
                moved = url_transition(
                    url_id=url.id,
                    expected=State.INIT,
                    event=Event.NO_RESPONSE,
                    agent=Agent.LOAD,
                    owner=self.owner,
                    http_status=result.status,
                    reason=f"robots.txt: {result.detail}",
                    last_status=result.status,
                    failure_kind=failure_of(result),
                    failure_count=url.failure_count + 1,
                    next_check_at=timezone.now() + timedelta(seconds=settings.CRAWL_NR1_BACKOFF),
                )
            self.outcome.failed += int(moved)

    def exclude_server(self, reason: str) -> None:
        self.visit.exclude_server(reason)
        self.outcome.server_excluded = reason


def page_store(*, url_id: int, result: FetchResult, checksum: str) -> int | None:
    """Store (or replace) the URL's page. Returns the page id when it is HTML, to be extracted."""
    content_type = result.headers.get("content-type", "")
    html = is_html(content_type or None)
    now = timezone.now()
    page, _ = Page.objects.update_or_create(
        url_id=url_id,
        defaults=dict(
            body_z=zlib.compress(result.body, 6),
            content_type=content_type[:200],
            size=len(result.body),
            checksum=checksum,
            fetched_at=now,
            # Nothing to extract from an image or a PDF: done at once.
            extracted_at=None if html else now,
            extract_dispatched_at=now if html else None,
            title="",
            description="",
            duplicate_of=None,
        ),
    )
    return page.id if html else None


_PAGE_COLUMNS = (
    "url_id", "body_z", "content_type", "size", "checksum", "fetched_at", "extracted_at",
    "extract_dispatched_at", "title", "description", "duplicate_of_id",
)  # fmt: skip


def pages_store(fetched: list[tuple[int, FetchResult, str]], *, now) -> list[int]:
    """Store (or replace) the pages of `(url_id, result, checksum)` in one statement; the ids of the
    HTML ones, to be extracted."""
    rows, html_urls = [], set()
    for url_id, result, checksum in fetched:
        content_type = result.headers.get("content-type", "")
        html = is_html(content_type or None)
        if html:
            html_urls.add(url_id)
        rows.append((
            url_id, zlib.compress(result.body, 6), content_type[:200], len(result.body), checksum, now,
            None if html else now, now if html else None, "", "", None,
        ))  # fmt: skip
    written = upsert(Page._meta.db_table, _PAGE_COLUMNS, rows, key="url_id")
    return [page_id for page_id, url_id in written if url_id in html_urls]


def load_server_batch(*, server_id: int, owner: str, gate: Gate | None = None) -> LoadOutcome | None:
    """Run one batch of the load agent on one server. None when the server is busy or not crawlable."""
    visit = ServerVisit.open(server_id=server_id, owner=owner, agent=Agent.LOAD, gate=gate)
    if visit is None:
        return None
    batch: LoadBatch | None = None
    try:
        urls = urls_claim(server_id=server_id, owner=owner, limit=settings.CRAWL_BATCH_SIZE)
        batch = LoadBatch(visit, urls)
        if urls:
            _load(batch, urls)
        return batch.outcome
    finally:
        # Whatever happened, nothing stays leased by us: unprocessed URLs go back to the pool.
        if batch is not None and batch.pending:
            urls_release(ids=sorted(batch.pending), owner=owner)
        visit.close()
        if not visit.stopped_by_caller() and _has_due_work(server_id):
            _redispatch(visit.server)


def _load(batch: LoadBatch, urls: list[Claimed]) -> None:
    visit = batch.visit
    rules = visit.robots()
    if isinstance(rules, FetchResult):
        if rules.failure == FailureKind.FORBIDDEN_ADDRESS:
            batch.exclude_server(f"private address: {rules.detail}")
        else:
            batch.fail_unanswered(urls, rules)
            batch.pending.clear()
        return
    flushed = 0
    try:
        for url in urls:
            if visit.stopping():
                break
            if not rules.allowed(url.url, visit.user_agent):
                url_exclude(url_id=url.id, reason="robots.txt", owner=batch.owner)
                batch.outcome.excluded += 1
                batch.pending.discard(url.id)
                continue
            if not visit.wait_turn() or not visit.may_fetch():
                break
            go_on = batch.fetch_one(url)
            if len(batch.outcome.page_ids) - flushed >= EXTRACT_GROUP:
                enqueue_extract_on_commit(page_ids=batch.outcome.page_ids[flushed:])
                flushed = len(batch.outcome.page_ids)
            if not go_on:
                break
    finally:
        batch.flush()  # what was fetched is kept, whatever stopped the batch
    enqueue_extract_on_commit(page_ids=batch.outcome.page_ids[flushed:])


def _has_due_work(server_id: int) -> bool:
    return Url.objects.filter(server_id=server_id, state=State.INIT.value, next_check_at__lte=timezone.now()).exists()


def _redispatch(server: Server) -> None:
    """Keep a server busy without waiting for the next dispatcher round."""
    changed = Server.objects.filter(id=server.id, dispatched_at__isnull=True, excluded_reason="").update(
        dispatched_at=timezone.now()
    )
    if changed:
        enqueue_load_on_commit(server_id=server.id, crawler_num=server.crawler_num)


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
