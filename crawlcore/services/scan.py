"""The active- and inactive-scan agents' work on one server (seed 001).

A sweep (crawlcore.services.sweep) reserves due URLs and sends them, grouped by server, to a scan
task; the task takes them over, opens a ServerVisit (the same cluster-wide slot and request spacing
as the load agent), re-checks each URL with HEAD / conditional GET — crawler.recheck decides what
the answers mean — and moves it along the life-cycle with one guarded write:

  active scan (Visited):      changed → Init (reloaded by the load agent's batch in the same visit, its
                              slot still held: ScanBatch.finish), unchanged → Visited,
                              no valid response → NoResponse1
  inactive scan (NoResponse): answers → Visited, or Init when never loaded or changed;
                              still failing → NoResponse2 → Dead
  both:                       410 → Dead; 429 / 503 + Retry-After → the server backs off, and the URL so
                              answered takes a step towards Dead (its own back-off, not first in line)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from django.db import transaction
from django.utils import timezone

from crawlcore.models import Page, Server, Url
from crawler.http import FetchResult
from crawler.lifecycle import Agent, Event, State, next_state
from crawler.recheck import MAX_REQUESTS, Finding, Known, Outcome, Recheck, Reply, event_for_recheck

from .agent import AgentBatch, AgentOutcome
from .freshness import lastmod_tally_add
from .load import ReloadBatch
from .urls import urls_lease, urls_release
from .visit import Gate, ServerVisit

log = logging.getLogger(__name__)

UNREAD = object()

SCAN_STATES: dict[Agent, tuple[State, ...]] = {
    Agent.ACTIVE_SCAN: (State.VISITED,),
    Agent.INACTIVE_SCAN: (State.NO_RESPONSE_1, State.NO_RESPONSE_2),
}


def sweep_owner_prefix(agent: Agent) -> str:
    """Lease owners of URLs a sweep reserved for `agent`; the scan task takes over any of them."""
    return f"sweep:{agent.value}:"


@dataclass
class ScanOutcome(AgentOutcome):
    checked: int = 0  # URLs moved (or confirmed) by a re-check
    reload: int = 0  # sent to Init, for the load agent
    unchanged: int = 0  # Visited, freshness reset


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


class ScanBatch(AgentBatch[Url, ScanOutcome]):
    """A scan agent's batch: the URLs a sweep reserved on one server, re-checked, and what to write for each."""

    def __init__(self, visit: ServerVisit, leased: list[int]):
        super().__init__(visit, ScanOutcome(), leased=leased)
        self.states = SCAN_STATES[self.agent]
        self.loaded: set[int] = set()
        self.sitemaps_read_at: datetime | None | object = UNREAD  # the server's, read once a batch
        self.reloaded = 0  # reloads done in this visit (finish)

    def claim(self) -> list[Url]:
        """The reserved URLs, already leased to us (scan_server_batch took them over from the sweep)."""
        urls = list(Url.objects.filter(id__in=list(self.pending), lease_owner=self.owner).order_by("id"))
        self.loaded = _loaded(urls) if self.agent == Agent.INACTIVE_SCAN else {u.id for u in urls}
        return urls

    def state_of(self, url: Url) -> State:
        return State(url.state)

    def count(self, new: State) -> None:
        self.outcome.checked += 1
        if new == State.INIT:
            self.outcome.reload += 1
        elif new == State.VISITED:
            self.outcome.unchanged += 1
        else:
            self.outcome.failed += 1

    def redispatch_wanted(self) -> bool:
        return self.outcome.reload > self.reloaded  # what finish() could not reload: now, not at the next dispatch

    def finish(self) -> None:
        """The changes the active scan found are reloaded in this visit, by the load agent's batch
        (ReloadBatch), before the slot is given back: until its reload the copy stays stale, and handed to a
        dispatch it would wait for a load worker and for the slot, which the next sweep's checks may take
        first (seconds to tens of seconds, the freshness objectives' reload lag)."""
        visit = self.visit
        if self.agent != Agent.ACTIVE_SCAN or not self.outcome.reload or visit.held() or visit.stopped_by_caller():
            return
        loaded = ReloadBatch(visit.handed_to(Agent.LOAD), self.outcome.reload).run()
        self.reloaded = loaded.fetched + loaded.failed

    def check(self, url: Url) -> bool:
        recheck = Recheck(known_of(url, loaded=url.id in self.loaded))
        for _request in range(MAX_REQUESTS):
            request = recheck.request
            result = self.request(url, method=request.method, headers=request.headers)
            if result is None:
                return False
            self.visit.record(result, url.id)
            # A body cut short by a timeout or a reset is no valid response, like for load.
            status = None if result.incomplete else result.status
            step = recheck.feed(Reply(status, result.headers, result.body if request.method == "GET" else None))
            if isinstance(step, Finding):
                break
        else:
            raise AssertionError(f"re-check of {url.url} wants more than {MAX_REQUESTS} requests")
        if step.outcome == Outcome.BACK_OFF:
            # The whole server asked for patience: none of our URLs is asked before it ends, and this one
            # takes its step towards Dead (AgentBatch.back_off).
            self.back_off(url, result, ids=list(self.pending))
            return False
        event = event_for_recheck(self.agent, step.outcome)
        assert event is not None
        # No HTTP answer at all: the fetcher's detail ("connection refused") says more than the finding.
        self.apply(url, event, result, step.reason if result.status is not None else result.detail)
        return True

    def apply(self, url: Url, event: Event, result: FetchResult, reason: str) -> None:
        new = next_state(State(url.state), event, self.agent)
        with transaction.atomic():
            if new not in (State.INIT, State.VISITED):
                self.fail(url, event, result, reason=reason, latency_ms=result.timings.total_ms)
                return
            now = timezone.now()
            fields = dict(failure_count=0, failure_kind="", next_check_at=now if new == State.INIT else None)
            if result.status != 304:  # a 304 says nothing new about the page: keep the stored status
                fields["last_status"] = result.status
            moved = self.move(
                url, event, http_status=result.status, latency_ms=result.timings.total_ms, reason=reason, now=now,
                **fields,
            )  # fmt: skip
            if moved and new == State.VISITED and result.method == "GET" and result.status in (200, 304):
                page_revisit(url_id=url.id, result=result, now=now)
            if moved and self.agent == Agent.ACTIVE_SCAN:
                self.tally_lastmod(url, changed=new == State.INIT, last_modified=result.headers.get("last-modified"))

    def tally_lastmod(self, url: Url, *, changed: bool, last_modified: str | None = None) -> None:
        """Count the check for the server's lastmod honesty (crawlcore.services.freshness.lastmod_tally_add):
        `url` still holds what it was before the check. A change lastmod did not announce counts against it
        only when the sitemap was read after our previous check and after the new version began (its
        Last-Modified, when the answer gave one): a sitemap read before the change could not tell it."""
        before = url.last_checked_at
        announced = bool(url.sitemap_lastmod and before and url.sitemap_lastmod > before)
        if self.sitemaps_read_at is UNREAD:
            rows = Server.objects.filter(id=url.server_id).values_list("sitemaps_read_at", flat=True)
            self.sitemaps_read_at = rows.first()
        read_at = self.sitemaps_read_at
        began = _http_date(last_modified)
        foretell = bool(read_at and before and read_at > before and (began is None or read_at >= began))
        lastmod_tally_add(server_id=url.server_id, announced=announced, changed=changed, could_foretell=foretell)


def _http_date(value: str | None) -> datetime | None:
    """An HTTP date as an aware datetime (one without a zone is UTC, as HTTP dates are); None if not one."""
    try:
        when = parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def page_revisit(*, url_id: int, result: FetchResult, now: datetime) -> None:
    """Keep a re-check by GET that found the stored copy unchanged (the same body, or 304 Not Modified) as
    the page's revisit, for the archive; a HEAD fetched no payload, so it is no revisit."""
    Page.objects.filter(url_id=url_id).update(
        revisit_at=now, revisit_request_head=result.request_head, revisit_response_head=result.response_head
    )


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
    return ScanBatch(visit, leased=sorted(ids)).run()  # in the order they are checked


def _loaded(urls: list[Url]) -> set[int]:
    """URLs that were ever loaded: they have a stored page, or were a redirect. The others failed at
    their first load, so any answer now means 'load it' (RESPONDS_RELOAD)."""
    with_page = set(Page.objects.filter(url_id__in=[u.id for u in urls]).values_list("url_id", flat=True))
    return with_page | {u.id for u in urls if u.redirect_to}
