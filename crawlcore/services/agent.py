"""The skeleton of every agent that sends requests to a server (the load agent, the active and the inactive
scan), and what they all write of a response.

A batch, on one server: claim its URLs (a lease each) → hold one of the server's slots (ServerVisit) →
robots.txt → for each URL: set it aside if robots.txt disallows it, else wait the server's politeness turn,
fetch, record the status check, move the URL along the life-cycle (urls_transition) → give back what was
not done → send the server's next load if it has due work. What differs between the agents is which URLs
a batch takes (`claim`), and what one URL costs and means (`check`: one GET for the load agent, one to
three HEAD / GET re-checks for a scan); both are the subclass's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawler.http import FailureKind, FetchResult
from crawler.lifecycle import Agent, Event, State, backoff_after, next_state
from crawler.sanitize import header_int

from .load_dispatch import servers_dispatch_with_due_work
from .urls import url_exclude, url_transition, urls_release
from .visit import ServerVisit

log = logging.getLogger(__name__)


def response_fields(result: FetchResult) -> dict:
    """What a response tells about a URL, stored on its row (the scans compare against it)."""
    h = result.headers
    return dict(
        last_status=result.status,
        last_modified=h.get("last-modified", "")[:100],
        etag=h.get("etag", "")[:200],
        content_length=header_int(h.get("content-length")),
    )


def failure_of(result: FetchResult) -> str:
    return result.failure.value if result.failure else FailureKind.HTTP_STATUS.value


def failure_fields(result: FetchResult, *, state: State, failure_count: int, now: datetime) -> dict:
    """The row of a URL that gave no valid response and moved to `state` (NoResponse1, NoResponse2 or
    Dead): its next re-check after the state's back-off, none once Dead."""
    backoff = backoff_after(state, nr1_backoff=settings.CRAWL_NR1_BACKOFF, nr2_backoff=settings.CRAWL_NR2_BACKOFF)
    return dict(
        last_status=result.status,
        failure_kind=failure_of(result),
        failure_count=failure_count,
        next_check_at=None if backoff is None else now + timedelta(seconds=backoff),
    )


class AgentUrl(Protocol):
    """What the skeleton reads of a URL: the load agent's Claimed rows, the scans' Url instances."""

    @property
    def id(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def failure_count(self) -> int: ...


UrlT = TypeVar("UrlT", bound=AgentUrl)


@dataclass
class AgentOutcome:
    failed: int = 0  # a step towards Dead, or Dead (410)
    excluded: int = 0  # disallowed by robots.txt
    backed_off: bool = False
    server_excluded: str = ""


OutcomeT = TypeVar("OutcomeT", bound=AgentOutcome)


class AgentBatch(Generic[UrlT, OutcomeT]):
    """One agent's batch on one server, run once with `run()` on an open visit.

    Subclasses say which URLs the batch takes (`claim`, leased to `owner`), what state they are in
    (`state_of`), the states robots.txt exclusion keeps them in (`states`), how one URL is re-checked or
    fetched and moved (`check`), what a move counts for (`count`), and when the server's next load is
    sent (`redispatch_wanted`)."""

    states: tuple[State, ...]

    def __init__(self, visit: ServerVisit, outcome: OutcomeT, *, leased: Sequence[int] = ()):
        self.visit = visit
        self.agent: Agent = visit.agent
        self.owner = visit.owner
        self.outcome = outcome
        self.urls: list[UrlT] = []
        # Leased by us, no outcome written yet, in the order they are checked; given back at the end.
        self.pending: dict[int, None] = dict.fromkeys(leased)
        self.rounds = 0  # claims made in this visit (another_round)

    # -- what each agent supplies -------------------------------------------------------------------
    def claim(self) -> list[UrlT]:
        raise NotImplementedError

    def state_of(self, url: UrlT) -> State:
        raise NotImplementedError

    def check(self, url: UrlT) -> bool:
        """Request (`request`: the politeness turn, the guard), record and move one URL. False when the batch
        must stop (out of time, the server backs off or is excluded); the URL then stays pending and is
        handed back."""
        raise NotImplementedError

    def count(self, new: State) -> None:
        """A move to `new` happened: count it in the outcome."""
        raise NotImplementedError

    def finish(self) -> None:
        """After the URLs, however the loop over them ended."""

    def redispatch_wanted(self) -> bool:
        raise NotImplementedError

    def another_round(self, took: float) -> bool:
        """After a round of URLs that all got an outcome (`took` seconds): claim the server's next ones in
        this visit, its slot held and robots.txt known, rather than end the task and send a message for the
        next (the continuation). None do by default."""
        return False

    # -- the skeleton -------------------------------------------------------------------------------
    def run(self) -> OutcomeT:
        """Claim, work through the URLs (again while another_round() says so), give back the rest, close the
        visit, re-dispatch."""
        try:
            while True:
                started = time.monotonic()
                self.urls = self.claim()
                self.pending = dict.fromkeys(u.id for u in self.urls)
                self.rounds += 1
                if not self.urls:
                    break
                self.work()
                if self.pending or not self.another_round(time.monotonic() - started):
                    break
            return self.outcome
        except Exception:
            # A failing URL moves forward, so it cannot fail every batch: the one in hand waits a lease period.
            if self.pending:
                later = timezone.now() + timedelta(seconds=settings.CRAWL_LEASE_SECONDS)
                urls_release(ids=[next(iter(self.pending))], owner=self.owner, next_check_at=later)
            raise
        finally:
            # Whatever happened, nothing stays leased by us: unprocessed URLs go back to the pool.
            if self.pending:
                urls_release(ids=list(self.pending), owner=self.owner)
            self.visit.close()
            if not self.visit.stopped_by_caller() and self.redispatch_wanted():
                # Keep the server busy without waiting for the next dispatcher round. The load agent's is its
                # robot going on with its server (seed 000): a continuation, not a new hand-out.
                continuation = self.visit.agent == Agent.LOAD
                servers_dispatch_with_due_work(server_ids=[self.visit.server.id], continuation=continuation)

    def work(self) -> None:
        visit = self.visit
        rules = visit.robots()
        if isinstance(rules, FetchResult):
            if rules.failure == FailureKind.FORBIDDEN_ADDRESS:
                self.exclude_forbidden(rules)
            else:
                # robots.txt did not answer: the server is held (its health, source robots) and asked again at
                # the monitor's recovery or the next probe, which bring these URLs due again at once.
                self.fail_unanswered(rules)
                self.outcome.backed_off = True
            return
        try:
            for url in self.urls:
                if visit.stopping():
                    break
                if not rules.allowed(url.url, visit.user_agent):
                    self.exclude(url)
                    continue
                if not self.check(url):
                    break
        finally:
            self.finish()

    def request(
        self, url: UrlT, *, method: str = "GET", headers: dict[str, str] | None = None, take: bool = False
    ) -> FetchResult | None:
        """Wait the server's politeness turn, then send one request under the private-address guard; the
        caller records it. None when the batch must stop: out of time or stopped (the URL is handed back),
        the caller's page cap reached (`take`: a page to count), or the server's address forbidden (the
        server is excluded)."""
        if not self.visit.wait_turn() or (take and not self.visit.may_fetch()):
            return None
        result = self.visit.fetch(url.url, method=method, headers=headers)
        if result.failure == FailureKind.FORBIDDEN_ADDRESS:
            self.exclude_forbidden(result)
            return None
        return result

    def move(
        self, url: UrlT, event: Event, *, http_status: int | None, latency_ms: float | None, reason: str, now: datetime,
        **fields,
    ) -> bool:  # fmt: skip
        """Move one URL by `event` (one guarded write, in the caller's transaction), then count it. True if
        it moved; either way it is no longer ours to give back."""
        state = self.state_of(url)
        moved = url_transition(
            url_id=url.id,
            expected=state,
            event=event,
            agent=self.agent,
            owner=self.owner,
            http_status=http_status,
            latency_ms=latency_ms,
            reason=reason,
            now=now,
            **fields,
        )
        self.pending.pop(url.id, None)
        if moved:
            self.count(next_state(state, event, self.agent))
        return moved

    def fail(self, url: UrlT, event: Event, result: FetchResult, *, reason: str, latency_ms: float | None) -> bool:
        """No valid response (or 410): a step towards Dead, spaced by the back-off of the state it reaches."""
        now = timezone.now()
        new = next_state(self.state_of(url), event, self.agent)
        fields = failure_fields(result, state=new, failure_count=url.failure_count + 1, now=now)
        return self.move(url, event, http_status=result.status, latency_ms=latency_ms, reason=reason, now=now, **fields)

    def fail_unanswered(self, result: FetchResult) -> None:
        """robots.txt did not answer: the server's URLs are not responding either. No request is made for
        them (each would wait out the same timeout); each takes a step towards Dead with the reason, and
        its event no latency of its own."""
        for url in self.urls:
            with transaction.atomic():
                self.fail(url, Event.NO_RESPONSE, result, reason=f"robots.txt: {result.detail}", latency_ms=None)

    def exclude(self, url: UrlT) -> None:
        """Disallowed by robots.txt: set aside in the state it is in (there is no transition for this)."""
        url_exclude(url_id=url.id, reason="robots.txt", owner=self.owner, states=self.states)
        self.pending.pop(url.id, None)
        self.outcome.excluded += 1

    def exclude_forbidden(self, result: FetchResult) -> None:
        """The server resolves to an address we may not contact: no request went out, none ever will."""
        self.exclude_server(f"private address: {result.detail}")

    def exclude_server(self, reason: str) -> None:
        self.visit.exclude_server(reason)
        self.outcome.server_excluded = reason

    def back_off(self, url: UrlT, result: FetchResult, *, ids: Sequence[int] = ()) -> None:
        """The server asked for patience (429, 503 + Retry-After): nobody in the cluster asks it before then,
        and `ids` are given back due no earlier. `url`, the one so answered, takes a step towards Dead like
        any URL without a valid response, on its own back-off and not before the server's pause ends: given
        back as it was, it would stand first in line again when the pause ends, draw the same answer and
        pause the server again, so that none of the server's other URLs were ever asked for. The caller has
        recorded its check."""
        until = self.visit.back_off(result)
        now = timezone.now()
        new = next_state(self.state_of(url), Event.NO_RESPONSE, self.agent)
        fields = failure_fields(result, state=new, failure_count=url.failure_count + 1, now=now)
        if fields["next_check_at"] is not None:
            fields["next_check_at"] = max(fields["next_check_at"], until)
        reason = f"HTTP {result.status}: come back after {(until - now).total_seconds():.0f}s"
        with transaction.atomic():
            self.move(url, Event.NO_RESPONSE, http_status=result.status, latency_ms=result.timings.total_ms,
                      reason=reason, now=now, **fields)  # fmt: skip
        others = [i for i in ids if i != url.id]
        if others:
            urls_release(ids=others, owner=self.owner, next_check_at=until)
        for url_id in others:
            self.pending.pop(url_id, None)
        self.outcome.backed_off = True
