"""The active- and inactive-scan agents' work on one server (seed 001, DESIGN.md §4–5).

A sweep (crawlcore.services.sweep) reserves due URLs and sends them, grouped by server, to a scan
task; the task takes them over, opens a ServerVisit (the same cluster-wide slot and request spacing
as the load agent), re-checks each URL with HEAD / conditional GET — crawler.recheck decides what
the answers mean — and moves it along the life-cycle with one guarded write:

  active scan (Visited):      changed → Init (reloaded by the load agent), unchanged → Visited,
                              no valid response → NoResponse1
  inactive scan (NoResponse): answers → Visited, or Init when never loaded or changed;
                              still failing → NoResponse2 → Dead
  both:                       410 → Dead; 429 / 503 + Retry-After → the server backs off, no state changes
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.models import Page, Url
from crawler.fetch import FailureKind, FetchResult
from crawler.lifecycle import Agent, Event, State, next_state
from crawler.recheck import MAX_REQUESTS, Finding, Known, Outcome, Recheck, Reply, event_for_recheck

from .dispatch import servers_dispatch_with_due_work
from .load import failure_of
from .urls import url_exclude, url_transition, urls_lease, urls_release
from .visit import Gate, ServerVisit

log = logging.getLogger(__name__)

SCAN_STATES: dict[Agent, tuple[State, ...]] = {
    Agent.ACTIVE_SCAN: (State.VISITED,),
    Agent.INACTIVE_SCAN: (State.NO_RESPONSE_1, State.NO_RESPONSE_2),
}


def sweep_owner_prefix(agent: Agent) -> str:
    """Lease owners of URLs a sweep reserved for `agent`; the scan task takes over any of them."""
    return f"sweep:{agent.value}:"


@dataclass
class ScanOutcome:
    checked: int = 0  # URLs moved (or confirmed) by a re-check
    reload: int = 0  # sent to Init, for the load agent
    unchanged: int = 0  # Visited, freshness reset
    failed: int = 0  # a step towards Dead, or Dead (410)
    excluded: int = 0  # disallowed by robots.txt
    backed_off: bool = False
    server_excluded: str = ""


def known_of(url: Url, *, loaded: bool) -> Known:
    return Known(
        url=url.url,
        etag=url.etag,
        last_modified=url.last_modified,
        content_length=url.content_length,
        checksum=url.checksum,
        redirect_to=url.redirect_to,
        loaded=loaded,
    )


class ScanBatch:
    """A scan agent's side of a server visit: the re-checks and what to write for each."""

    def __init__(self, visit: ServerVisit, pending: list[int]):
        self.visit = visit
        self.agent = visit.agent
        self.owner = visit.owner
        self.pending = pending  # leased ids not yet processed; released at the end
        self.outcome = ScanOutcome()

    def check(self, url: Url, *, loaded: bool) -> bool:
        """Re-check one URL and record the result. False when the batch must stop (out of time, the
        server backs off or is excluded); the URL then stays pending and is handed back."""
        recheck = Recheck(known_of(url, loaded=loaded))
        for _request in range(MAX_REQUESTS):
            if not self.visit.wait_turn():
                return False
            request = recheck.request
            result = self.visit.fetch(url.url, method=request.method, headers=request.headers)
            if result.failure == FailureKind.FORBIDDEN_ADDRESS:
                self.exclude_server(f"private address: {result.detail}")
                return False
            self.visit.record(result, url.id)
            # A body cut short by a timeout or a reset is no valid response (DESIGN.md §4), like for load.
            status = None if result.incomplete else result.status
            step = recheck.feed(Reply(status, result.headers, result.body if request.method == "GET" else None))
            if isinstance(step, Finding):
                break
        else:
            raise AssertionError(f"re-check of {url.url} wants more than {MAX_REQUESTS} requests")
        if step.outcome == Outcome.BACK_OFF:
            # The whole server asked for patience: none of our URLs is asked before it ends.
            until = self.visit.back_off(result)
            urls_release(ids=self.pending, owner=self.owner, next_check_at=until)
            self.pending.clear()
            self.outcome.backed_off = True
            return False
        event = event_for_recheck(self.agent, step.outcome)
        assert event is not None
        # No HTTP answer at all: the fetcher's detail ("connection refused") says more than the finding.
        self.apply(url, event, result, step.reason if result.status is not None else result.detail)
        return True

    def apply(self, url: Url, event: Event, result: FetchResult, reason: str) -> None:
        state = State(url.state)
        new = next_state(state, event, self.agent)
        now = timezone.now()
        if new in (State.INIT, State.VISITED):
            fields = dict(failure_count=0, failure_kind="", next_check_at=now if new == State.INIT else None)
            if result.status != 304:  # a 304 says nothing new about the page: keep the stored status
                fields["last_status"] = result.status
        else:
            fields = dict(
                last_status=result.status,
                failure_kind=failure_of(result),
                failure_count=url.failure_count + 1,
                next_check_at=_next_check(new, now),
            )
        with transaction.atomic():
            moved = url_transition(
                url_id=url.id,
                expected=state,
                event=event,
                agent=self.agent,
                owner=self.owner,
                http_status=result.status,
                latency_ms=result.timings.total_ms,
                reason=reason,
                now=now,
                **fields,
            )
        self.pending.remove(url.id)
        if not moved:
            return
        self.outcome.checked += 1
        if new == State.INIT:
            self.outcome.reload += 1
        elif new == State.VISITED:
            self.outcome.unchanged += 1
        else:
            self.outcome.failed += 1

    def fail_unanswered(self, urls: list[Url], result: FetchResult) -> None:
        """robots.txt did not answer: as for the load agent, the server's URLs count as not answering
        either, without a request each (each would wait out the same timeout)."""
        for url in urls:
            self.apply(url, Event.NO_RESPONSE, result, f"robots.txt: {result.detail}")

    def exclude(self, url: Url) -> None:
        """Disallowed by robots.txt: set aside in the state it is in (there is no transition for this)."""
        url_exclude(url_id=url.id, reason="robots.txt", owner=self.owner, states=SCAN_STATES[self.agent])
        self.pending.remove(url.id)
        self.outcome.excluded += 1

    def exclude_server(self, reason: str) -> None:
        self.visit.exclude_server(reason)
        self.outcome.server_excluded = reason


def _next_check(state: State, now: datetime) -> datetime | None:
    """A failing URL's next re-check: spaced out so a host down for an hour is not dead in a minute."""
    backoff = {State.NO_RESPONSE_1: settings.CRAWL_NR1_BACKOFF, State.NO_RESPONSE_2: settings.CRAWL_NR2_BACKOFF}
    return now + timedelta(seconds=backoff[state]) if state in backoff else None


def scan_server_batch(
    *, agent: Agent, server_id: int, url_ids: list[int], owner: str, gate: Gate | None = None
) -> ScanOutcome | None:
    """Re-check the URLs a sweep reserved on one server. None when none of them is left to us (the
    message was redelivered, or another task took them) or the server has no free slot."""
    ids = urls_lease(
        ids=url_ids,
        owner=owner,
        states=SCAN_STATES[agent],
        server_id=server_id,
        held_by_prefix=sweep_owner_prefix(agent),
    )
    if not ids:
        return None
    visit = ServerVisit.open(server_id=server_id, owner=owner, agent=agent, gate=gate)
    if visit is None:
        # Busy (a load or another scan holds its slot) or no longer crawled: the next sweep offers them again.
        urls_release(ids=ids, owner=owner)
        return None
    batch = ScanBatch(visit, pending=sorted(ids))  # in the order they are checked
    try:
        _scan(batch, list(Url.objects.filter(id__in=ids, lease_owner=owner).order_by("id")))
        return batch.outcome
    except Exception:
        # A failing URL moves forward, so it cannot fail every sweep: the one in hand waits a lease period.
        if batch.pending:
            later = timezone.now() + timedelta(seconds=settings.CRAWL_LEASE_SECONDS)
            urls_release(ids=batch.pending[:1], owner=owner, next_check_at=later)
        raise
    finally:
        if batch.pending:
            urls_release(ids=batch.pending, owner=owner)
        visit.close()
        if batch.outcome.reload:
            servers_dispatch_with_due_work(server_ids=[server_id])  # reload now, not at the next dispatch


def _scan(batch: ScanBatch, urls: list[Url]) -> None:
    visit = batch.visit
    rules = visit.robots()
    if isinstance(rules, FetchResult):
        if rules.failure == FailureKind.FORBIDDEN_ADDRESS:
            batch.exclude_server(f"private address: {rules.detail}")
        else:
            batch.fail_unanswered(urls, rules)
        return
    loaded = _loaded(urls) if batch.agent == Agent.INACTIVE_SCAN else {u.id for u in urls}
    for url in urls:
        if visit.stopping():
            break
        if not rules.allowed(url.url, visit.user_agent):
            batch.exclude(url)
            continue
        if not batch.check(url, loaded=url.id in loaded):
            break


def _loaded(urls: list[Url]) -> set[int]:
    """URLs that were ever loaded: they have a stored page, or were a redirect. The others failed at
    their first load, so any answer now means 'load it' (RESPONDS_RELOAD)."""
    with_page = set(Page.objects.filter(url_id__in=[u.id for u in urls]).values_list("url_id", flat=True))
    return with_page | {u.id for u in urls if u.redirect_to}
