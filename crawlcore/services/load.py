"""The HTML-load agent's work for one server: claim a batch of Init URLs, fetch them politely, store
what came back, move each URL along the life-cycle, and hand HTML pages and PDFs to the extract agent. The
steps every agent shares (robots.txt, politeness, giving back, re-dispatch) are crawlcore.services.agent's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DataError, transaction
from django.utils import timezone

from crawlcore.models import JobUrl, Link, Url
from crawler.http import FailureKind, FetchResult
from crawler.lifecycle import Agent, Event, State, event_for_fetch
from crawler.urlnorm import UrlError, canonicalize

from .agent import AgentBatch, AgentOutcome, response_fields
from .job_admission import jobs_admit
from .load_dispatch import server_goes_on
from .load_group import fetched_write
from .pages import page_store
from .queue import enqueue_extract_on_commit
from .servers import server_merge_if_alias
from .sitemaps import sitemaps_read
from .sites import server_home_first
from .urls import Claimed, Move, new_url_from, urls_claim, urls_insert, urls_release
from .visit import Gate, ServerVisit

log = logging.getLogger(__name__)

# What a database raises for a value it refuses: too long or out of range (DataError), a NUL in text
# (psycopg2's ValueError), an integer beyond SQLite's (OverflowError). A response's fault, not the database's.
POISON = (DataError, ValueError, OverflowError)

# Pages per extract message: fewer messages (a Celery send costs ~1-2 ms of the load worker's Python, and
# each task as much again in the extract worker), still prompt extraction. A round of the visit sends what it
# stored at its end, so with CRAWL_BATCH_SIZE 25 a round is one message of 25 pages (with 20, a round was
# two, of 20 and 5, at a measurable cost a page: bench/THROUGHPUT.md); bigger batches send every 40.
EXTRACT_GROUP = 40
# ... or fewer, when their bodies come to this many bytes: an extract batch holds what it parses of all its
# pages at once (up to thousands of links a page), so large pages go in smaller messages.
EXTRACT_GROUP_BYTES = 1024 * 1024
# Plain pages (2xx, not a home page) written per statement (crawlcore.db.chain). A worker killed before the
# write loses at most these fetches' results (their requests stay on the record, finished as interrupted,
# and their URLs are fetched again once the lease ends).
STORE_GROUP = 20
# ... or fewer, when their bodies come to this many bytes: a group is held in memory until it is written, so
# with bodies of up to CRAWL_MAX_BODY_BYTES a count alone would let each of a worker's threads hold twenty.
STORE_GROUP_BYTES = 2 * 1024 * 1024
# Intent rows committed together ahead of their requests (ServerVisit.reserve): one statement instead of
# one a request, for as many as the visit sends in the next INTENT_AHEAD seconds at its pace, at most
# INTENT_GROUP. A worker killed mid-group leaves those not sent as rows with no request behind them, all
# begun within about a second of the kill, which the reconciler finishes as interrupted (our side's
# failure, never a server's), as it does the one a kill between an intent and its send always could leave.
INTENT_GROUP = 10
INTENT_AHEAD = 1.0
# A resource is checked with HEAD; a server that does not do HEAD says so with one of these, then gets a GET.
HEAD_REFUSED = frozenset({403, 405, 501})
# A batch holding URLs of crawl jobs looks this often whether any of them was set aside meanwhile (the job
# paused or stopped, its patterns edited: crawlcore.services.job_hold, job_definitions), and hands those back unfetched.
SET_ASIDE_LOOK_EVERY = 1.0


@dataclass
class LoadOutcome(AgentOutcome):
    fetched: int = 0
    page_ids: list[int] = field(default_factory=list)


def visited_fields(result: FetchResult, *, checksum: str, redirect_to: str = "", failure: str = "") -> dict:
    """The row of a URL whose page was fetched (a valid response): what the response tells, the failure
    count reset, and as failure kind only what was wrong with the response itself (too large, a bad redirect)."""
    return dict(
        **response_fields(result),
        checksum=checksum,
        failure_kind=failure,
        failure_count=0,
        redirect_to=redirect_to,
        next_check_at=None,
    )


class LoadBatch(AgentBatch[Claimed, LoadOutcome]):
    """The load agent's batch: due Init URLs of one server, one GET each, their pages stored."""

    states = (State.INIT,)

    def __init__(self, visit: ServerVisit):
        super().__init__(visit, LoadOutcome())
        self.fetched: list[tuple[Claimed, FetchResult]] = []  # plain pages waiting for flush()
        self.fetched_bytes = 0  # their bodies' bytes
        self.sent = 0  # page ids already sent to the extract agent
        self.unsent_bytes = 0  # the bodies' bytes of the pages stored and not sent yet
        self.home = f"{visit.server.origin}/"
        self.of_jobs = False  # whether the round's URLs include a crawl job's
        self.set_aside_at = 0.0  # time.monotonic() of the last look (set_aside)
        self.handed_back: set[int] = set()  # set aside since the claim: given back unfetched

    def claim(self) -> list[Claimed]:
        # Seed 003: a server on a known site's address fetches its home page alone first, to compare (sites.py).
        only = server_home_first(server=self.visit.server)
        urls = urls_claim(server_id=self.visit.server.id, owner=self.owner, limit=settings.CRAWL_BATCH_SIZE, only=only)
        return self.taken(urls)

    def taken(self, urls: list[Claimed]) -> list[Claimed]:
        """The round's claimed URLs, with what set_aside() needs to know of them."""
        self.of_jobs = bool(urls) and JobUrl.objects.filter(url_id__in=[u.id for u in urls]).exists()
        self.set_aside_at = time.monotonic()
        return urls

    def set_aside(self, url: Claimed) -> bool:
        """Whether `url` was set aside since the claim (its job paused or stopped, its patterns edited): then
        it is handed back unfetched, its reason kept. Looked up for the batch's pending URLs of jobs at most
        every SET_ASIDE_LOOK_EVERY seconds, so a pause stops the requests within about that plus one turn."""
        if url.id in self.handed_back:
            return True
        if not self.of_jobs or time.monotonic() - self.set_aside_at < SET_ASIDE_LOOK_EVERY:
            return False
        self.set_aside_at = time.monotonic()
        # Fetched pages waiting for flush() are still Init and ours: they are written, not handed back.
        waiting = set(self.pending) - {u.id for u, _ in self.fetched}
        aside = set(Url.objects.filter(id__in=list(waiting)).exclude(exclusion_reason="")
                    .values_list("id", flat=True))  # fmt: skip
        if aside:
            self.visit.unreserve([u.url for u in self.urls if u.id in aside])
            urls_release(ids=sorted(aside), owner=self.owner)
            for pk in aside:
                self.pending.pop(pk, None)
            self.handed_back |= aside
        return url.id in aside

    def state_of(self, url: Claimed) -> State:
        return State.INIT

    def count(self, new: State) -> None:
        if new == State.VISITED:
            self.outcome.fetched += 1
        else:
            self.outcome.failed += 1

    def redispatch_wanted(self) -> bool:
        return True  # whenever it has due Init URLs left (servers_dispatch_with_due_work)

    def another_round(self, took: float) -> bool:
        """The robot stays on its server (seed 000) within the task's budget: after a full batch, the next
        one is claimed in the same visit when another round as long as this one still fits the budget and
        the server is still to be crawled and not paused. What the continuation message did, without the
        visit's open and close, robots.txt, the dispatch and a message each batch."""
        visit = self.visit
        if (
            self.outcome.server_excluded
            or self.outcome.backed_off
            or len(self.urls) < settings.CRAWL_BATCH_SIZE  # the server's last due URLs, or its home page alone
            or visit.stopping()
            or visit.elapsed() + took > settings.CRAWL_TASK_BUDGET
        ):
            return False
        return server_goes_on(server_id=visit.server.id)

    def check(self, url: Claimed) -> bool:
        if self.set_aside(url):
            return True
        if not url.resource and not self.visit.reserved(url.url):
            self.reserve_from(url)
        result = self.request(url, method="HEAD" if url.resource else "GET", take=True)
        if result is not None and url.resource and result.status in HEAD_REFUSED:
            self.visit.record(result, url.id)  # the HEAD is a request the server saw: it is on the record too
            result = self.request(url)
        if result is None:
            return False
        go_on = self.fetch_one(url, result)
        if len(self.outcome.page_ids) - self.sent >= EXTRACT_GROUP or self.unsent_bytes >= EXTRACT_GROUP_BYTES:
            self.send_extract()
        return go_on

    def reserve_from(self, url: Claimed) -> None:
        """The intents of this page's GET and of the next pages' the visit sends within INTENT_AHEAD seconds
        at its pace so far (at most INTENT_GROUP), committed in one statement (ServerVisit.reserve). Pages
        robots.txt disallows are never sent, so they get none: an intent left until the visit's close would
        outlive a kill as a check of a request that never went out, begun long before it."""
        n = min(INTENT_GROUP, max(1, self.visit.sends_within(INTENT_AHEAD)))
        at = self.urls.index(url)
        rules, agent = self.visit.robots(), self.visit.user_agent  # read by work() before any check: no request
        ahead = (u.url for u in self.urls[at:] if not u.resource)
        if not isinstance(rules, FetchResult):
            ahead = (u for u in ahead if rules.allowed(u, agent))
        self.visit.reserve(list(itertools.islice(ahead, n)))

    def work(self) -> None:
        super().work()
        if self.rounds == 1:  # due at most once a visit (their TTL is hours)
            self.read_sitemaps()
        self.send_extract()

    def read_sitemaps(self) -> None:
        """The server's sitemaps, when due, after the batch's own URLs (the first batch of a server is its
        seed): the URLs they add are loaded by the next batch, which redispatch_wanted() sends."""
        if self.outcome.server_excluded or self.outcome.backed_off or self.visit.stopping():
            return
        rules = self.visit.robots()  # known by now: no request
        if isinstance(rules, FetchResult):
            return
        parent = min(self.urls, key=lambda u: u.depth)
        try:
            sitemaps_read(visit=self.visit, rules=rules, parent=parent)
        except POISON as exc:
            # A value the database refused (the fetcher's cleaning missed it): the sitemaps wait their TTL.
            log.warning("sitemaps of %s could not be stored: %s", self.visit.server.origin, exc)

    def finish(self) -> None:
        self.flush()  # what was fetched is kept, whatever stopped the batch

    def send_extract(self) -> None:
        enqueue_extract_on_commit(page_ids=self.outcome.page_ids[self.sent :])
        self.sent, self.unsent_bytes = len(self.outcome.page_ids), 0

    def fetch_one(self, url: Claimed, result: FetchResult) -> bool:
        """Record one URL's fetch and move it (plain pages wait for flush()). False when the batch must stop
        (the server backs off or is excluded)."""
        event = event_for_fetch(result.status, has_retry_after="retry-after" in result.headers)
        if event == Event.FETCHED and result.incomplete:
            # Headers without the whole body (body timeout, reset, bad gzip) is no valid response (§4).
            event = Event.NO_RESPONSE
        if event is None:
            self.visit.record(result, url.id)
            # This URL takes its step towards Dead (AgentBatch.back_off); the others are Init, held back by
            # the server's own next request time (the visit's turn), not by theirs.
            self.back_off(url, result)
            return False
        if event == Event.FETCHED and 200 <= (result.status or 0) < 300 and url.url != self.home:
            self.fetched.append((url, result))
            self.fetched_bytes += len(result.body)
            if len(self.fetched) >= STORE_GROUP or self.fetched_bytes >= STORE_GROUP_BYTES:
                self.flush()
            return True
        self.write_one(url, result, event)
        return not self.outcome.server_excluded

    def write_one(self, url: Claimed, result: FetchResult, event: Event) -> None:
        """Record one fetch and move its URL in a transaction of its own; a response the database refuses
        is classified instead (poisoned)."""
        before, fetched = len(self.outcome.page_ids), self.outcome.fetched
        try:
            with transaction.atomic():
                self.visit.record(result, url.id)
                # A savepoint: when another agent got there first, _store undoes our move, not the check's outcome.
                with transaction.atomic():
                    if event == Event.FETCHED:
                        self._store(url, result)
                    else:
                        self.fail(url, event, result, reason=result.detail, latency_ms=result.timings.total_ms)
        except POISON as exc:
            del self.outcome.page_ids[before:]  # rolled back with the rest, and so was the move it counted
            self.outcome.fetched = fetched
            self.poisoned(url, result, exc)
        self.pending.pop(url.id, None)

    def poisoned(self, url: Claimed, result: FetchResult, exc: Exception) -> None:
        """The response came but can't be stored (a value the database refuses, which the fetcher's
        cleaning did not catch). The URL moves forward as a response we could not use, failure kind
        bad_response, on the NoResponse back-off like any failure, so it is not fetched again for an hour
        and can't hold up or loop its batch; its check is recorded without the offending data."""
        log.warning("response of %s could not be stored, classified bad_response: %s", url.url[:200], exc)
        bare = dataclasses.replace(
            result,
            status=result.status if result.status is not None and 100 <= result.status <= 999 else None,
            headers={},
            body=b"",
            request_head="",
            response_head="",  # nothing of it for the archive either (crawlcore.services.exchanges)
            failure=FailureKind.BAD_RESPONSE,
            detail=f"could not be stored: {type(exc).__name__}",
        )
        with transaction.atomic():
            self.visit.record(bare, url.id)
            self.fail(url, Event.NO_RESPONSE, bare, reason=bare.detail, latency_ms=result.timings.total_ms)

    def flush(self) -> None:
        """Write the plain pages fetched so far together (fetched_write): their checks, their URLs' moves to
        Visited (guarded as urls_transition: still Init, still ours), the pages."""
        fetched, self.fetched, self.fetched_bytes = self.fetched, [], 0
        if not fetched:
            return
        now = timezone.now()
        checksums = {url.id: hashlib.sha1(result.body).hexdigest() if result.body else "" for url, result in fetched}
        moves = [
            Move(
                url.id,
                visited_fields(result, checksum=checksums[url.id], failure=_failure(result)),
                http_status=result.status,
                latency_ms=result.timings.total_ms,
            )
            for url, result in fetched
        ]
        try:
            moved, page_ids = fetched_write(
                visit=self.visit, owner=self.owner, fetched=fetched, checksums=checksums, moves=moves, now=now
            )
            done = [(url, result) for url, result in fetched if url.id in moved]
        except POISON:
            # One page of the group can't be stored: write them one by one, so only that one is classified
            # (fetch_one's own fallback) and the others are kept.
            for url, result in fetched:
                self.write_one(url, result, Event.FETCHED)
            return
        for url, _ in fetched:
            self.pending.pop(url.id, None)
        self.outcome.fetched += len(done)
        self.outcome.page_ids.extend(page_ids)
        self.unsent_bytes += sum(len(result.body) for _, result in done)

    def _store(self, url: Claimed, result: FetchResult) -> None:
        body = result.body
        checksum = hashlib.sha1(body).hexdigest() if body else ""
        redirect_to, failure = "", _failure(result)
        location = result.headers.get("location")
        if result.status is not None and 300 <= result.status < 400 and location:
            redirect_to, failure = self._follow_redirect(url, location, failure)
        moved = self.move(
            url,
            Event.FETCHED,
            http_status=result.status,
            latency_ms=result.timings.total_ms,
            reason="",
            now=timezone.now(),
            **visited_fields(result, checksum=checksum, redirect_to=redirect_to, failure=failure),
        )
        if not moved:
            transaction.set_rollback(True)  # someone else owns it now: keep their result, not ours
            return
        if result.status is not None and 200 <= result.status < 300 and not url.resource:
            page_id = page_store(url_id=url.id, result=result, checksum=checksum)
            if page_id is not None:
                self.outcome.page_ids.append(page_id)
                self.unsent_bytes += len(body)
            if url.url == self.home:
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
        new = new_url_from(url, target, depth=url.depth, redirect_hops=url.redirect_hops + 1, resource=url.resource)
        # A job's URL leads its jobs to the target at the same depth, where their rules allow.
        admission = jobs_admit(links=[(url.id, target, 0)])
        if admission.applies(url.id):
            new = admission.candidate(new)
        ids = urls_insert(urls=[new]).ids
        admission.record(ids)
        if target in ids and ids[target] != url.id:
            Link.objects.bulk_create([Link(from_url_id=url.id, to_url_id=ids[target])], ignore_conflicts=True)
        return target, failure


def _failure(result: FetchResult) -> str:
    """A valid response's failure kind: empty, or what was wrong with its body (too large)."""
    return result.failure.value if result.failure else ""


class ReloadBatch(LoadBatch):
    """The load agent's batch in an active scan's visit, right after its checks: at most as many due Init URLs
    as the checks found changed (the reloads, shallowest due first), one round; the server's sitemaps when due,
    as any load batch."""

    def __init__(self, visit: ServerVisit, limit: int):
        super().__init__(visit)
        self.limit = limit

    def claim(self) -> list[Claimed]:
        return self.taken(urls_claim(server_id=self.visit.server.id, owner=self.owner, limit=self.limit))

    def another_round(self, took: float) -> bool:
        return False


def load_server_batch(*, server_id: int, owner: str, gate: Gate | None = None) -> LoadOutcome | None:
    """Run one batch of the load agent on one server. None when the server is busy or not crawlable."""
    visit = ServerVisit.open(server_id=server_id, owner=owner, agent=Agent.LOAD, gate=gate)
    if visit is None:
        return None
    return LoadBatch(visit).run()
