"""One task's visit to one server, shared by every agent that sends requests (load, active and inactive
scan): a concurrency slot, request spacing held across the whole cluster, robots.txt, the
private-address guard, and a status check for every request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.utils import timezone

from crawlcore.models import Exchange, Server
from crawlcore.selectors_jobs import jobs_politeness
from crawler.curl_failures import refused_nul_header
from crawler.engine import EngineFetcher
from crawler.fetch import Fetcher
from crawler.hosthealth import HealthSource
from crawler.http import FailureKind, FetchPolicy, FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.politeness import retry_after_seconds
from crawler.robots import ALLOW_ALL, DISALLOW_ALL, RobotsRules, product_token, rules_from_response, rules_from_text
from crawler.urlnorm import UrlError, canonicalize

from .exchanges import exchanges_store, held_by_page
from .health import (
    HELD,
    PROBE,
    health_admit,
    health_hold,
    health_pace_delay,
    health_probe_done,
    health_rate_limited,
    health_record_responses,
    health_release,
)
from .request_records import (
    check_begin,
    check_discard,
    check_finish,
    check_record,
    checks_begin,
    checks_discard,
)
from .servers import (
    server_back_off,
    server_claim,
    server_exclude,
    server_politeness_id,
    server_release,
    server_robots_lock,
    server_save_robots,
    server_take_turn,
)

log = logging.getLogger(__name__)

_local = threading.local()


class Gate(Protocol):
    """Lets the caller stop a visit between two requests or cap the pages it may fetch."""

    stopped: threading.Event

    def take(self) -> bool: ...
    def wait(self, seconds: float) -> bool: ...


def thread_fetcher(kind: str | None = None) -> Fetcher | EngineFetcher:
    """The fetcher of this worker thread, kept across tasks (and rebuilt when the settings it is built from
    change). With CRAWL_FETCH_ENGINE=engine (the default) it hands each request to the process's one fetch
    engine, which drives every thread's transfers together and keeps their keep-alive connections; with
    "threads", a requests/urllib3 Fetcher of the thread's own."""
    policy = FetchPolicy(
        connect_timeout=settings.CRAWL_CONNECT_TIMEOUT,
        header_timeout=settings.CRAWL_HEADER_TIMEOUT,
        body_timeout=settings.CRAWL_BODY_TIMEOUT,
        max_body_bytes=settings.CRAWL_MAX_BODY_BYTES,
        user_agent=settings.CRAWL_USER_AGENT,
        dns_timeout=settings.CRAWL_DNS_TIMEOUT,
    )
    kind = kind or settings.CRAWL_FETCH_ENGINE
    fetchers = getattr(_local, "fetchers", None)
    if fetchers is None:
        _local.fetchers = fetchers = {}
    held = fetchers.get(kind)
    if held is None or held[0] != policy:
        if held is not None:
            held[1].close()
        held = fetchers[kind] = (policy, EngineFetcher(policy) if kind == "engine" else Fetcher(policy))
    return held[1]


GUARD_REFUSED = "refused: not an address the crawler may contact"


def address_check_for(server: Server):
    """The private-address guard; servers an operator added are trusted with any address."""
    if server.trusted:
        return None
    return untrusted_address_check()


def untrusted_address_check():
    """The guard for a host nobody vouched for: only CRAWL_ALLOW_PRIVATE's networks may be private."""
    allowed = parse_cidrs(",".join(settings.CRAWL_ALLOW_PRIVATE))
    return lambda ip: forbidden_reason(ip, allowed)


def _same_host(url: str, server: Server) -> bool:
    return server.serves(url)


def answer_ms(result: FetchResult) -> float:
    """How long the server took to answer: request sent -> first byte of the response. Not the whole exchange
    (total_ms): that also holds the time the request waited in this worker before it went out and the time
    the body took to be read, both this machine's load, not the server's; a busy crawler would pace, and show
    as slow, every server it crawls. The whole exchange only where no first byte was timed."""
    first = result.timings.first_byte_ms
    return first if first is not None else result.timings.total_ms


class ServerVisit:
    """Holds one of the server's slots from open() to close(); every request goes through fetch().

    What the answers tell of the server's health goes to crawlcore.services.health as they come: a 429 or 503
    backs the server off (the visit stops: nothing more is asked of it before then), the answers' times and
    failures set its pace at close(). A visit of a server held down is a probe: one request, whose answer
    lifts the hold or widens the next window."""

    def __init__(
        self,
        server: Server,
        owner: str,
        agent: Agent,
        gate: Gate | None = None,
        *,
        probe: bool = False,
        turn_id: int | None = None,
    ):
        self.server = server
        self.owner = owner
        self.agent = agent
        self.gate = gate
        self.started = time.monotonic()
        self.opened_at = timezone.now()  # before any of the visit's status checks was begun
        self.user_agent = product_token(settings.CRAWL_USER_AGENT)
        self._check = address_check_for(server)
        self._last_send: float | None = None
        self._intents: dict[tuple[str, str], int] = {}  # committed ahead by reserve(), not sent yet
        self._sends = 0  # requests sent in this visit (with self.started: their pace)
        self._rules: RobotsRules | None = None  # robots.txt's, once read (robots())
        self.probe = probe  # the window's one probe of a held server, until its answer comes
        self.probe_failed = False
        self.backoff_until: datetime | None = None  # the server asked for patience (429, 503) during the visit
        self._samples: list[float | None] = []  # each answer's ms, None for a failure: the server's pace
        self._pace = health_pace_delay(server_id=server.id)
        # Slots and turns are per host and port, whatever the scheme (server_politeness_id).
        self.turn_id = turn_id if turn_id is not None else server.id
        # A running job's politeness, read once a visit (selectors_jobs.jobs_politeness): never the server's own.
        self._job_delay = jobs_politeness(server_id=server.id)[0] or 0.0

    @classmethod
    def open(cls, *, server_id: int, owner: str, agent: Agent, gate: Gate | None = None) -> ServerVisit | None:
        """Take a slot of the server; None when all are taken or the server is not to be crawled now (its
        health holds it: an operator's pause, a back-off, down with its next probe not due)."""
        turn_id = server_politeness_id(server_id=server_id)
        if server_claim(server_id=server_id, owner=owner, agent=agent.value, slots_of=turn_id) is None:
            return None
        verdict = health_admit(server_id=server_id)
        if verdict == HELD:
            server_release(server_id=turn_id, owner=owner)
            return None
        return cls(Server.objects.get(id=server_id), owner, agent, gate, probe=verdict == PROBE, turn_id=turn_id)

    def handed_to(self, agent: Agent) -> ServerVisit:
        """This visit's slot, owner and task budget for another agent's batch (the reload an active scan's
        check found due): the same turn, no new claim; closing either gives the slot back."""
        visit = ServerVisit(self.server, self.owner, agent, self.gate, turn_id=self.turn_id)
        visit.started, visit._last_send, visit._rules = self.started, self._last_send, self._rules
        visit.backoff_until = self.backoff_until
        return visit

    def close(self) -> None:
        try:
            if self._samples:
                samples, self._samples = self._samples, []
                health_record_responses(server_id=self.server.id, samples=samples)
            if self._intents:
                checks_discard(check_ids=list(self._intents.values()))  # never sent: no request, no check
                self._intents.clear()
        finally:
            # The slot is given back whatever happened to the discard (a row left pending is finished as
            # interrupted by the reconciler).
            server_release(server_id=self.turn_id, owner=self.owner)

    def reserve(self, urls: Sequence[str], *, method: str = "GET") -> None:
        """Commit the intent rows of the visit's next requests together (checks_begin): one statement for
        the group instead of one a request. fetch() takes a request's own when it sends it; close() discards
        the ones never sent. Not inside a transaction, like fetch()."""
        wanted = [(url, method) for url in dict.fromkeys(urls) if (url, method) not in self._intents]
        if wanted:
            self._intents.update(checks_begin(server_id=self.server.id, requests=wanted, agent=self.agent))

    def unreserve(self, urls: Sequence[str]) -> None:
        """Discard the intents of these URLs' requests now (checks_discard): they will not be sent in this
        visit (handed back unfetched), and a kill before close() would leave them as checks never sent."""
        gone = set(urls)
        keys = [key for key in self._intents if key[0] in gone]
        if keys:
            checks_discard(check_ids=[self._intents.pop(key) for key in keys])

    def reserved(self, url: str, method: str = "GET") -> bool:
        return (url, method) in self._intents

    def sends_within(self, seconds: float) -> int:
        """How many requests this visit sends in `seconds`, at its pace so far (0 before the first)."""
        if not self._sends:
            return 0
        return int(seconds * self._sends / max(self.elapsed(), 1e-3))

    # -- time ---------------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stopping(self) -> bool:
        """The caller asked us to stop, this task has worked long enough on one server, the server asked for
        patience, or this visit was a probe that got no answer."""
        stopped = self.gate is not None and self.gate.stopped.is_set()
        return stopped or self.held() or self.elapsed() > settings.CRAWL_TASK_BUDGET

    def held(self) -> bool:
        """Nothing more may be asked of the server in this visit: it backs off, or the probe went unanswered."""
        return self.backoff_until is not None or self.probe_failed

    def stopped_by_caller(self) -> bool:
        return self.gate is not None and self.gate.stopped.is_set()

    def may_fetch(self) -> bool:
        return self.gate is None or self.gate.take()

    def _sleep(self, seconds: float) -> bool:
        if self.gate is not None:
            return not self.gate.wait(seconds)
        time.sleep(seconds)
        return True

    def delay(self) -> float:
        # Politeness (Server.request_delay), raised by the pace the server's answers ask for (its health) and
        # by the running jobs that reach it.
        return max(self.server.request_delay(), self._pace, self._job_delay)

    def wait_turn(self) -> bool:
        """Wait until this server may get its next request, from anyone in the cluster; take that turn.

        False when the task budget or a stop comes first, or the server may be asked nothing more (the caller
        hands its work back).
        """
        if self.held():
            return False
        # The cluster-wide turn spaces the grants; this also spaces our own sends as measured where they
        # happen, so a thread descheduled between its grant and its send cannot crowd its next request.
        if self._last_send is not None:
            if self.delay() <= 0:
                # No spacing to keep (no delay configured, none asked by robots.txt): the server's slots
                # alone bound its load. The first turn of the visit was taken, so a back-off another
                # worker set (429, Retry-After) was honoured; no database round trip per request after it.
                return True
            gap = self._last_send + self.delay() - time.monotonic()
            if gap > 0 and (self.elapsed() + gap > settings.CRAWL_TASK_BUDGET or not self._sleep(gap)):
                return False
        while True:
            wait = server_take_turn(server_id=self.turn_id, delay=self.delay())
            if wait <= 0:
                return True
            if self.elapsed() + wait > settings.CRAWL_TASK_BUDGET or not self._sleep(wait):
                return False

    # -- requests -----------------------------------------------------------------------------------
    def fetch(self, url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> FetchResult:
        """One request, under the guard. The caller has waited its turn and records the check.

        Its StatusCheck row is committed before the request goes out (crawlcore.services.request_records), so a
        worker killed before record() leaves a trace the reconciler finishes; must not be called inside
        a transaction."""
        check_id = self._intents.pop((url, method), None)
        if check_id is None:
            check_id = check_begin(server_id=self.server.id, requested_url=url, method=method, agent=self.agent)
        self._last_send = time.monotonic()
        self._sends += 1
        # A time limit or a kill during the request leaves the row pending: the reconciler finishes it.
        # Trust belongs to the host an operator named, not to the visit: a request to any other host (a
        # robots.txt redirect hop, say) is guarded like a host nobody vouched for.
        check = self._check if _same_host(url, self.server) else untrusted_address_check()
        result = thread_fetcher().fetch(url, method=method, headers=headers, address_check=check)
        if refused_nul_header(result) and self.wait_turn():
            # The engine (libcurl) refuses a header with a NUL in it; the Fetcher reads the response and
            # cleans it, so the page is kept. One more request, on the server's next turn, under
            # the same check row: rare, and only for a server that sends such headers.
            self._last_send = time.monotonic()
            result = thread_fetcher("threads").fetch(url, method=method, headers=headers, address_check=check)
        if result.failure != FailureKind.FORBIDDEN_ADDRESS:
            self._observe(result)
        if result.failure == FailureKind.FORBIDDEN_ADDRESS:
            check_discard(check_id=check_id)  # refused before connecting: no request, no check
            # What readers see of it (a URL's reason, a server's exclusion) says "refused" and nothing of the
            # address a name resolved to, so a crawl cannot be used to map an internal network's names.
            log.debug("%s refused by the private-address guard: %s", url[:200], result.detail)
            result.detail = GUARD_REFUSED
        else:
            result.check_id = check_id
        return result

    def record(self, result: FetchResult, url_id: int | None, *, kind: str = Exchange.PAGE) -> None:
        """The outcome of a fetch(), written over its intent row (in the caller's transaction, if any); an
        answer no Page row keeps (a redirect, a 4xx or 5xx, a robots.txt or sitemap fetch: `url_id` None) is
        kept for the archive beside it (crawlcore.services.exchanges)."""
        if url_id is None or not held_by_page(result):
            exchanges_store(results=[(result, url_id)], server_id=self.server.id, kind=kind)
        if result.check_id is not None and check_finish(check_id=result.check_id, result=result, url_id=url_id):
            return
        check_record(result=result, server_id=self.server.id, url_id=url_id, agent=self.agent)

    def _observe(self, result: FetchResult) -> None:
        """What one answer tells of the server's health: its time or its failure (the pace), a 429 or 503 (a
        back-off, from now on for the whole cluster), a probe's verdict."""
        status = result.status
        failed = status is None or status >= 500 or result.incomplete
        self._samples.append(None if failed else answer_ms(result))
        if status in (429, 503):
            given = result.headers.get("retry-after")
            self.backoff_until = health_rate_limited(
                server_id=self.server.id, status=status, retry_after=retry_after_seconds(given) if given else None
            )
        if self.probe:
            answered = not failed and status != 429
            health_probe_done(server_id=self.server.id, answered=answered)
            self.probe, self.probe_failed = False, not answered

    def back_off(self, result: FetchResult) -> datetime:
        """The server asked for patience (429, 503): nobody in the cluster asks before the time fetch() set
        (crawlcore.services.health.health_rate_limited)."""
        if self.backoff_until is None:
            given = result.headers.get("retry-after")
            self.backoff_until = health_rate_limited(
                server_id=self.server.id, status=result.status or 503,
                retry_after=retry_after_seconds(given) if given else None,
            )  # fmt: skip
        return self.backoff_until

    def exclude_server(self, reason: str) -> None:
        server_exclude(server_id=self.server.id, reason=reason[:100])

    # -- robots.txt ---------------------------------------------------------------------------------
    def robots(self) -> RobotsRules | FetchResult:
        """The server's rules, cached for CRAWL_ROBOTS_TTL (and kept by the visit once read: it lasts at most
        CRAWL_TASK_BUDGET); or, when robots.txt did not answer or answered 5xx (RFC 9309: assume complete
        disallow), the failed fetch — for a while the server then counts as not responding, and nothing
        else of it is requested."""
        if self._rules is None:
            rules = self._robots_read()
            if isinstance(rules, FetchResult):
                return rules
            self._rules = rules
        return self._rules

    def _robots_read(self) -> RobotsRules | FetchResult:
        known = self._robots_known()
        if known is not None:
            return known
        with server_robots_lock(server_id=self.server.id, wait=self._robots_wait()):
            # Another visit of this server may have fetched them while this one waited for the lock.
            self.server.refresh_from_db(fields=_ROBOTS_FIELDS)
            known = self._robots_known()
            return known if known is not None else self._robots_fetch()

    def _robots_known(self) -> RobotsRules | FetchResult | None:
        s = self.server
        if self.probe and s.robots_kind == "unreachable":
            return None  # the probe of a server held for its robots.txt is that robots.txt, asked again
        if s.robots_fetched_at is not None and s.robots_kind:
            age = (timezone.now() - s.robots_fetched_at).total_seconds()
            if s.robots_kind == "unreachable" and age < settings.CRAWL_ROBOTS_RETRY:
                return _unreachable(s, age)
            if s.robots_kind != "unreachable" and age < settings.CRAWL_ROBOTS_TTL:
                return rules_from_text(s.robots_txt) if s.robots_kind == "parsed" else RobotsRules(kind=s.robots_kind)
        return None

    def _robots_wait(self) -> float:
        """As long as one robots.txt request may take (its deadlines); a longer redirect chain is not waited
        for, so a waiting visit stays within its task's time limit."""
        return settings.CRAWL_CONNECT_TIMEOUT + settings.CRAWL_HEADER_TIMEOUT + settings.CRAWL_BODY_TIMEOUT

    def _robots_fetch(self) -> RobotsRules | FetchResult:
        s = self.server
        first = f"{s.origin}/robots.txt"
        result = self._fetch_robots(first)
        if result.failure == FailureKind.FORBIDDEN_ADDRESS and result.url == first:
            return result  # the server's own address is forbidden: the caller excludes the server
        if result.failure == FailureKind.FORBIDDEN_ADDRESS:
            # A redirect toward an address we may not contact: the file is unavailable to us, which RFC 9309
            # (§2.3.1.3) reads as no restrictions, as for a 4xx. The server itself stays crawlable.
            log.warning("robots.txt of %s redirects to a forbidden address: %s", s.origin, result.detail)
            server_save_robots(server_id=s.id, kind=ALLOW_ALL, text="", crawl_delay=None, ip=None)
            s.crawl_delay = None
            return RobotsRules(kind=ALLOW_ALL)
        if result.status is None or result.status >= 500 or result.incomplete:
            failure = result.failure.value if result.failure else FailureKind.HTTP_STATUS.value
            memo = f"{failure}|{result.status or ''}|{result.detail}"
            server_save_robots(server_id=s.id, kind="unreachable", text=memo, crawl_delay=None, ip=None)
            # RFC 9309: complete disallow. The server is held (nothing more of it is asked for) and robots.txt
            # asked again at the monitor's recovery or the next probe (its health).
            what = f"HTTP {result.status}" if result.status is not None else (result.detail or failure)
            health_hold(server_ids=[s.id], source=HealthSource.ROBOTS, reason=what[:200])
            return result
        health_release(server_ids=[s.id], source=HealthSource.ROBOTS)
        rules = rules_from_response(result.status, result.body)
        if result.failure == FailureKind.TOO_LARGE and not result.body:
            # Declared larger than the body limit, so never read: its rules are unknown, and an empty text
            # would allow everything. Obey the strictest reading instead.
            rules = RobotsRules(kind=DISALLOW_ALL)
        delay = rules.crawl_delay(self.user_agent)
        server_save_robots(server_id=s.id, kind=rules.kind, text=rules.text, crawl_delay=delay, ip=result.peer_ip)
        s.crawl_delay, s.ip = delay, result.peer_ip or s.ip
        if delay is not None:
            # The robots.txt request itself was spaced by the default delay; the next one must respect
            # the delay the site just asked for.
            server_back_off(server_id=self.turn_id, until=timezone.now() + timedelta(seconds=self.delay()))
        return rules

    def _fetch_robots(self, url: str) -> FetchResult:
        return self.fetch_following(url, kind=Exchange.ROBOTS)

    def fetch_following(self, url: str, *, kind: str = Exchange.SITEMAP) -> FetchResult:
        """GET a file of the server's own (robots.txt, a sitemap) following redirects, each hop on its
        politeness turn, through fetch()'s guard, and recorded (no Url row; each answer kept as an exchange
        of `kind`); the last answer."""
        result: FetchResult | None = None
        for _hop in range(settings.CRAWL_MAX_REDIRECTS + 1):
            self.wait_turn()
            result = self.fetch(url)
            if result.failure == FailureKind.FORBIDDEN_ADDRESS:
                return result
            self.record(result, url_id=None, kind=kind)
            location = result.headers.get("location")
            if result.status is None or not (300 <= result.status < 400 and location):
                break
            try:
                url = canonicalize(location, base=url)
            except UrlError:
                break
        assert result is not None
        return result


_ROBOTS_FIELDS = ["robots_kind", "robots_txt", "robots_fetched_at", "crawl_delay", "ip"]


def _unreachable(server: Server, age: float) -> FetchResult:
    """A stand-in for 'robots.txt did not answer a moment ago', rebuilt from the memo: no new request."""
    failure, status, detail = (server.robots_txt.split("|", 2) + ["", ""])[:3]
    try:
        kind = FailureKind(failure)
    except ValueError:
        kind = FailureKind.OTHER
    return FetchResult(
        url=f"{server.origin}/robots.txt",
        method="GET",
        status=int(status) if status.isdigit() else None,
        headers={},
        body=b"",
        failure=None if kind == FailureKind.HTTP_STATUS else kind,
        detail=f"{detail} ({age:.0f}s ago)"[:300],
        truncated=False,
        bytes_received=0,
        timings=Timings(None, None, None, None, 0.0),
        peer_ip=None,
    )
