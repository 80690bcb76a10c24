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

from crawladmin.models import Link, Page, Server, Url
from crawler.fetch import FailureKind, FetchResult
from crawler.lifecycle import Agent, Event, State, event_for_fetch
from crawler.parse import is_html
from crawler.urlnorm import UrlError, canonicalize

from .queue import enqueue_extract_on_commit, enqueue_load_on_commit
from .servers import server_merge_if_alias
from .urls import new_url_from, url_exclude, url_transition, urls_claim, urls_insert, urls_release
from .visit import Gate, ServerVisit

log = logging.getLogger(__name__)

EXTRACT_GROUP = 10  # pages per extract message: fewer messages, still prompt extraction


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


class LoadBatch:
    """The load agent's side of a server visit: what to do with each response."""

    def __init__(self, visit: ServerVisit):
        self.visit = visit
        self.owner = visit.owner
        self.outcome = LoadOutcome()

    def fetch_one(self, url: Url) -> bool:
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
            self.outcome.backed_off = True
            return False
        with transaction.atomic():
            self.visit.record(result, url.id)
            if event == Event.FETCHED:
                self._store(url, result)
            else:
                self._fail(url, result, event)
        return not self.outcome.server_excluded

    def _store(self, url: Url, result: FetchResult) -> None:
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

    def _follow_redirect(self, url: Url, location: str, failure: str) -> tuple[str, str]:
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

    def _fail(self, url: Url, result: FetchResult, event: Event) -> None:
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

    def fail_unanswered(self, urls: list[Url], result: FetchResult) -> None:
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


def load_server_batch(*, server_id: int, owner: str, gate: Gate | None = None) -> LoadOutcome | None:
    """Run one batch of the load agent on one server. None when the server is busy or not crawlable."""
    visit = ServerVisit.open(server_id=server_id, owner=owner, agent=Agent.LOAD, gate=gate)
    if visit is None:
        return None
    batch = LoadBatch(visit)
    pending: list[int] = []
    try:
        urls = urls_claim(server_id=server_id, owner=owner, limit=settings.CRAWL_BATCH_SIZE)
        pending = [u.id for u in urls]
        if urls:
            _load(batch, urls, pending)
        return batch.outcome
    finally:
        # Whatever happened, nothing stays leased by us: unprocessed URLs go back to the pool.
        if pending:
            urls_release(ids=pending, owner=owner)
        visit.close()
        if not visit.stopped_by_caller() and _has_due_work(server_id):
            _redispatch(visit.server)


def _load(batch: LoadBatch, urls: list[Url], pending: list[int]) -> None:
    visit = batch.visit
    rules = visit.robots()
    if isinstance(rules, FetchResult):
        if rules.failure == FailureKind.FORBIDDEN_ADDRESS:
            batch.exclude_server(f"private address: {rules.detail}")
        else:
            batch.fail_unanswered(urls, rules)
            pending.clear()
        return
    flushed = 0
    for url in urls:
        if visit.stopping():
            break
        if not rules.allowed(url.url, visit.user_agent):
            url_exclude(url_id=url.id, reason="robots.txt", owner=batch.owner)
            batch.outcome.excluded += 1
            pending.remove(url.id)
            continue
        if not visit.wait_turn() or not visit.may_fetch():
            break
        go_on = batch.fetch_one(url)
        pending.remove(url.id)
        if len(batch.outcome.page_ids) - flushed >= EXTRACT_GROUP:
            enqueue_extract_on_commit(page_ids=batch.outcome.page_ids[flushed:])
            flushed = len(batch.outcome.page_ids)
        if not go_on:
            break
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
