"""The HTML-load agent's work for one server: claim a batch of Init URLs, fetch them politely, store
what came back, move each URL along the life-cycle, and hand HTML pages to the extract agent.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawladmin.models import Link, Page, Server, Url
from crawler.fetch import FailureKind, Fetcher, FetchPolicy, FetchResult
from crawler.lifecycle import Agent, Event, State, event_for_fetch
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.parse import is_html
from crawler.politeness import crawl_delay, retry_after_seconds
from crawler.robots import RobotsRules, product_token, rules_from_response, rules_from_text
from crawler.urlnorm import UrlError, canonicalize

from .checks import check_record
from .queue import enqueue_extract_on_commit, enqueue_load_on_commit
from .servers import server_claim, server_exclude, server_release, server_save_robots
from .urls import NewUrl, url_exclude, url_transition, urls_claim, urls_insert, urls_release

log = logging.getLogger(__name__)

_local = threading.local()
EXTRACT_GROUP = 10  # pages per extract message: fewer messages, still prompt extraction


def _fetcher() -> Fetcher:
    """One fetcher per worker thread, kept across tasks so keep-alive connections are reused."""
    fetcher = getattr(_local, "fetcher", None)
    if fetcher is None:
        policy = FetchPolicy(
            connect_timeout=settings.CRAWL_CONNECT_TIMEOUT,
            header_timeout=settings.CRAWL_HEADER_TIMEOUT,
            body_timeout=settings.CRAWL_BODY_TIMEOUT,
            max_body_bytes=settings.CRAWL_MAX_BODY_BYTES,
            user_agent=settings.CRAWL_USER_AGENT,
        )
        _local.fetcher = fetcher = Fetcher(policy)
    return fetcher


def _address_check(server: Server):
    """The private-address guard; servers an operator added are trusted with any address."""
    if server.trusted:
        return None
    allowed = parse_cidrs(",".join(settings.CRAWL_ALLOW_PRIVATE))
    return lambda ip: forbidden_reason(ip, allowed)


@dataclass
class LoadOutcome:
    fetched: int = 0
    failed: int = 0
    excluded: int = 0
    backed_off: bool = False
    server_excluded: str = ""
    page_ids: list[int] = field(default_factory=list)


class ServerLoad:
    """One load task's session with one server, holding its lease from claim to release."""

    def __init__(self, server: Server, owner: str, gate: Gate | None):
        self.server = server
        self.owner = owner
        self.gate = gate
        self.outcome = LoadOutcome()
        self.started = time.monotonic()
        self.next_request_at: datetime = server.next_request_at or timezone.now()
        self.check = _address_check(server)
        self.user_agent = product_token(settings.CRAWL_USER_AGENT)

    # -- politeness -------------------------------------------------------------------------------
    def _delay(self) -> float:
        return crawl_delay(self.server.crawl_delay, default=settings.CRAWL_DEFAULT_DELAY, cap=settings.CRAWL_MAX_DELAY)

    def _wait_turn(self) -> bool:
        """Sleep until the server's next request slot; False when the task budget or a stop ends it first."""
        wait = (self.next_request_at - timezone.now()).total_seconds()
        if wait > 0:
            if self._elapsed() + wait > settings.CRAWL_TASK_BUDGET:
                return False
            if self.gate is not None:
                if self.gate.wait(wait):
                    return False
            else:
                time.sleep(wait)
        self.next_request_at = timezone.now() + timedelta(seconds=self._delay())
        return True

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _fetch(self, url: str, method: str = "GET") -> FetchResult:
        return _fetcher().fetch(url, method=method, address_check=self.check)

    # -- robots.txt -------------------------------------------------------------------------------
    def robots(self) -> RobotsRules | FetchResult:
        """The server's rules (cached for CRAWL_ROBOTS_TTL), or the failed fetch when it did not answer."""
        s = self.server
        fresh = (
            s.robots_fetched_at and (timezone.now() - s.robots_fetched_at).total_seconds() < settings.CRAWL_ROBOTS_TTL
        )
        if fresh and s.robots_kind:
            return rules_from_text(s.robots_txt) if s.robots_kind == "parsed" else RobotsRules(kind=s.robots_kind)
        url = f"{s.origin}/robots.txt"
        result = None
        for _hop in range(settings.CRAWL_MAX_REDIRECTS + 1):
            self._wait_turn()
            result = self._fetch(url)
            if result.failure == FailureKind.FORBIDDEN_ADDRESS:
                return result
            check_record(result=result, server_id=s.id, url_id=None, agent=Agent.LOAD)
            location = result.headers.get("location")
            if result.status is None or not (300 <= result.status < 400 and location):
                break
            try:
                url = canonicalize(location, base=url)
            except UrlError:
                break
        assert result is not None
        if result.status is None or result.status >= 500:
            return result  # unreachable: don't cache, treat the batch as not responding
        rules = rules_from_response(result.status, result.body)
        delay = rules.crawl_delay(self.user_agent)
        server_save_robots(server_id=s.id, kind=rules.kind, text=rules.text, crawl_delay=delay, ip=result.peer_ip)
        s.crawl_delay = delay
        return rules

    # -- one URL ----------------------------------------------------------------------------------
    def fetch_one(self, url: Url) -> bool:
        """Fetch and record one URL. False when the batch must stop (server backs off or is excluded)."""
        result = self._fetch(url.url)
        if result.failure == FailureKind.FORBIDDEN_ADDRESS:
            self._exclude_server(f"private address: {result.detail}")
            return False
        event = event_for_fetch(result.status, has_retry_after="retry-after" in result.headers)
        if event is None:
            self._back_off(url, result)
            return False
        with transaction.atomic():
            check_record(result=result, server_id=self.server.id, url_id=url.id, agent=Agent.LOAD)
            if event == Event.FETCHED:
                self._store(url, result)
            else:
                self._fail(url, result, event)
        return True

    def _store(self, url: Url, result: FetchResult) -> None:
        body = result.body
        checksum = hashlib.sha1(body).hexdigest() if body else ""
        h = result.headers
        redirect_to, failure = "", result.failure.value if result.failure else ""
        location = h.get("location")
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
            last_status=result.status,
            last_modified=h.get("last-modified", "")[:100],
            etag=h.get("etag", "")[:200],
            content_length=_int_or_none(h.get("content-length")),
            checksum=checksum,
            failure_kind=failure,
            failure_count=0,
            redirect_to=redirect_to,
            next_check_at=None,
        )
        if not moved:
            transaction.set_rollback(True)  # someone else owns it now: keep their result, not ours
            return
        self.outcome.fetched += 1
        if result.status is not None and 200 <= result.status < 300:
            content_type = h.get("content-type", "")
            html = is_html(content_type or None)
            now = timezone.now()
            page, _ = Page.objects.update_or_create(
                url_id=url.id,
                defaults=dict(
                    body_z=zlib.compress(body, 6),
                    content_type=content_type[:200],
                    size=len(body),
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
            if html:
                self.outcome.page_ids.append(page.id)

    def _follow_redirect(self, url: Url, location: str, failure: str) -> tuple[str, str]:
        """Record a redirect and queue its target as a new URL (not followed inline: the target may be
        another server, with its own politeness). Loops end by themselves: a known URL is not re-added."""
        try:
            target = canonicalize(location, base=url.url)
        except UrlError as exc:
            return "", f"bad_redirect_{exc.reason}"[:32]
        if url.redirect_hops + 1 > settings.CRAWL_MAX_REDIRECTS:
            return target, FailureKind.TOO_MANY_REDIRECTS.value
        ids = urls_insert(urls=[NewUrl(target, depth=url.depth, redirect_hops=url.redirect_hops + 1)]).ids
        if target in ids and ids[target] != url.id:
            Link.objects.bulk_create([Link(from_url_id=url.id, to_url_id=ids[target])], ignore_conflicts=True)
        return target, failure

    def _fail(self, url: Url, result: FetchResult, event: Event) -> None:
        failure = result.failure.value if result.failure else FailureKind.HTTP_STATUS.value
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
            failure_kind=failure,
            failure_count=url.failure_count + 1,
            next_check_at=None if final else timezone.now() + timedelta(seconds=settings.CRAWL_NR1_BACKOFF),
        )
        if moved:
            self.outcome.failed += 1

    def fail_unanswered(self, urls: list[Url], result: FetchResult) -> None:
        """The server did not answer robots.txt: its URLs are not responding either. No request is made
        for them (each would wait out the same timeout); each moves to NoResponse1 with the reason."""
        failure = result.failure.value if result.failure else FailureKind.HTTP_STATUS.value
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
                    failure_kind=failure,
                    failure_count=url.failure_count + 1,
                    next_check_at=timezone.now() + timedelta(seconds=settings.CRAWL_NR1_BACKOFF),
                )
            self.outcome.failed += int(moved)

    def _back_off(self, url: Url, result: FetchResult) -> None:
        wait = retry_after_seconds(result.headers.get("retry-after"))
        until = timezone.now() + timedelta(seconds=wait)
        self.next_request_at = max(self.next_request_at, until)
        check_record(result=result, server_id=self.server.id, url_id=url.id, agent=Agent.LOAD)
        urls_release(ids=[url.id], owner=self.owner, next_check_at=until)
        self.outcome.backed_off = True
        log.info("%s asked us to wait %.0fs (HTTP %s)", self.server, wait, result.status)

    def _exclude_server(self, reason: str) -> None:
        server_exclude(server_id=self.server.id, reason=reason[:100])
        self.outcome.server_excluded = reason

    def stopping(self) -> bool:
        return (self.gate is not None and self.gate.stopped.is_set()) or self._elapsed() > settings.CRAWL_TASK_BUDGET

    def may_fetch(self) -> bool:
        return self.gate is None or self.gate.take()


class Gate(Protocol):
    """Lets the caller stop a batch between two requests or cap the pages it may load."""

    stopped: threading.Event

    def take(self) -> bool: ...
    def wait(self, seconds: float) -> bool: ...


def load_server_batch(*, server_id: int, owner: str, gate: Gate | None = None) -> LoadOutcome | None:
    """Run one batch of the load agent on one server. None when the server is busy or not crawlable."""
    if not server_claim(server_id=server_id, owner=owner):
        return None
    server = Server.objects.get(id=server_id)
    session = ServerLoad(server, owner, gate)
    pending: list[int] = []
    try:
        batch = urls_claim(server_id=server_id, owner=owner, limit=settings.CRAWL_BATCH_SIZE)
        pending = [u.id for u in batch]
        if not batch:
            return session.outcome
        rules = session.robots()
        if isinstance(rules, FetchResult):
            if rules.failure == FailureKind.FORBIDDEN_ADDRESS:
                session._exclude_server(f"private address: {rules.detail}")
            else:
                session.fail_unanswered(batch, rules)
            return session.outcome
        flushed = 0
        for url in batch:
            if session.stopping():
                break
            if not rules.allowed(url.url, session.user_agent):
                url_exclude(url_id=url.id, reason="robots.txt", owner=owner)
                session.outcome.excluded += 1
                pending.remove(url.id)
                continue
            if not session._wait_turn() or not session.may_fetch():
                break
            go_on = session.fetch_one(url)
            pending.remove(url.id)
            if len(session.outcome.page_ids) - flushed >= EXTRACT_GROUP:
                enqueue_extract_on_commit(page_ids=session.outcome.page_ids[flushed:])
                flushed = len(session.outcome.page_ids)
            if not go_on:
                break
        enqueue_extract_on_commit(page_ids=session.outcome.page_ids[flushed:])
        return session.outcome
    finally:
        # Whatever happened, nothing stays leased by us: unprocessed URLs go back to the pool.
        if pending:
            urls_release(ids=pending, owner=owner)
        server_release(server_id=server_id, owner=owner, next_request_at=session.next_request_at)
        if not (gate is not None and gate.stopped.is_set()) and _has_due_work(server_id):
            _redispatch(server)


def _has_due_work(server_id: int) -> bool:
    return Url.objects.filter(server_id=server_id, state=State.INIT.value, next_check_at__lte=timezone.now()).exists()


def _redispatch(server: Server) -> None:
    """Keep a server busy without waiting for the next dispatcher round."""
    changed = Server.objects.filter(
        id=server.id, dispatched_at__isnull=True, lease_owner="", excluded_reason=""
    ).update(dispatched_at=timezone.now())
    if changed:
        enqueue_load_on_commit(server_id=server.id, crawler_num=server.crawler_num)


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
