"""Checking servers: claim the due ones, fetch their health URLs in parallel (crawler.multicheck),
write every check and the confirmed status changes in one transaction per batch.

Exactly-once writing: a worker claims a batch with one guarded UPDATE (due -> leased under a token), so a
redelivered or duplicated message claims nothing and writes nothing. A worker killed after its claim
loses that one check slot; the lease (next_check_at pushed forward) then expires and the server is due
again. Records are never lost once fetched: rows are written in bulk in the same transaction that moves
the confirmation state, so a check and its effect on the status stand or fall together.

Retries (MONITOR_RETRIES, seed 002's retry count): a check that ends in disconnect or delay is tried again
at once, within the round, before it counts; the round still writes one row per server (its `tries` say how
many requests it took). The checks that answered are written first, so a hanging server's retries hold up
no other server's status. The confirmation rule (monitoring/confirm.py) then counts rounds, not tries.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from crawlcore.db import bulk
from crawlcore.models import StatusCheck
from crawlcore.services.health import health_hold, health_release
from crawlcore.services.leases import lease_deadline
from crawlcore.services.render import answer_render
from crawler.hosthealth import HealthSource
from crawler.http import FailureKind, FetchPolicy, FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.multicheck import CheckRequest, MultiChecker
from crawler.status import BAD, CONFIRMED, GOOD, Category, Status

from .. import hooks
from ..accepted_codes import AcceptedCodes, classify
from ..assertions import Assertion, AssertionRuleError, assertion_failure, assertions_parse
from ..confirm import Confirmation, confirm
from ..content import ContentRule, content_failure
from ..kinds import Kind
from ..kinds.dns import DnsSpec
from ..models import LocationState, ServerMonitor, StatusChange
from ..quorum import locations_parse, quorum_decide, quorum_needed
from ..selectors import in_window, maintenance_windows
from ..validate import monitor_problems
from .certificates import certificates_record
from .evidence import evidence_record
from .incidents import incidents_from_changes
from .kinds import SPEC_FIELDS, Spec, kinds_run, spec_of
from .trust import REFUSED, address_guard, url_trusted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """One server to check, with its effective settings (per-server value or the MONITOR_* default).

    `problem` is set when the monitor's stored settings are unusable (a row that reached the database
    past the admin's validation): such a target is not fetched, and its check fails with that reason.
    """

    server_id: int
    url: str
    trusted: bool
    interval_s: float
    threshold_s: float
    accepted: AcceptedCodes
    fail_after: int
    recover_after: int
    content: ContentRule = ContentRule()  # empty: no content check
    problem: str = ""
    kind: str = Kind.HTTP.value  # monitoring.kinds; any but http is checked by its `spec`
    spec: Spec | None = None
    assertions: tuple[Assertion, ...] = ()  # HTTP: what a valid answer must also satisfy (monitoring.assertions)


BAD_SETTINGS = "bad_settings"  # the failure kind of a check that a monitor's unusable settings failed


def target_of(monitor: ServerMonitor) -> Target:
    """The monitor's effective settings. Never raises: an unusable field falls back to its MONITOR_*
    default, and the target carries the problem, so one bad row fails its own check, not its batch."""
    server = monitor.server
    problems = monitor_problems(
        health_url=monitor.health_url,
        interval_s=monitor.interval_s,
        delay_threshold_s=monitor.delay_threshold_s,
        accepted_codes=monitor.accepted_codes,
        fail_after=monitor.fail_after,
        recover_after=monitor.recover_after,
    )

    def usable(name: str, value, default):
        return default if name in problems or not value else value

    threshold = monitor.delay_threshold_s
    url = usable("health_url", monitor.health_url, f"{server.origin}/")
    trusted = url_trusted(url, server)  # the server's trust covers its own host only
    spec, kind_problem = spec_of(monitor)
    if kind_problem:
        problems["kind"] = kind_problem
    assertions = _assertions(monitor, trusted, problems)
    return Target(
        server_id=monitor.server_id,
        url=url,
        trusted=trusted,
        interval_s=usable("interval_s", monitor.interval_s, settings.MONITOR_INTERVAL),
        threshold_s=settings.MONITOR_DELAY_THRESHOLD
        if threshold is None or "delay_threshold_s" in problems
        else threshold,
        accepted=AcceptedCodes() if "accepted_codes" in problems else AcceptedCodes.parse(monitor.accepted_codes),
        fail_after=usable("fail_after", monitor.fail_after, settings.MONITOR_FAIL_AFTER),
        recover_after=usable("recover_after", monitor.recover_after, settings.MONITOR_RECOVER_AFTER),
        # A content check reads the body: on a URL nobody vouched for, its outcome would read a third party's page.
        content=ContentRule(
            monitor.content_must, monitor.content_must_not, monitor.content_regex, monitor.content_rendered
        )
        if trusted
        else ContentRule(),
        problem="; ".join(f"{name}: {message}" for name, message in problems.items()),
        kind=monitor.kind or Kind.HTTP.value,
        spec=spec,
        assertions=assertions,
    )


def _assertions(monitor: ServerMonitor, trusted: bool, problems: dict[str, str]) -> tuple[Assertion, ...]:
    """The monitor's response assertions; header and json ones only on a trusted URL, as content rules."""
    try:
        rules = assertions_parse(monitor.assertions)
    except AssertionRuleError as exc:
        problems["assertions"] = str(exc)
        return ()
    return rules if trusted else tuple(a for a in rules if not a.reads_response)


def _unchecked(target: Target) -> FetchResult:
    """The result standing in for the fetch a target's unusable settings prevented."""
    return FetchResult(
        url=target.url,
        method="GET",
        status=None,
        headers={},
        body=b"",
        failure=FailureKind.OTHER,
        detail=f"not checked: unusable monitor settings ({target.problem})",
        truncated=False,
        bytes_received=0,
        timings=Timings(None, None, None, None, 0.0),
        peer_ip=None,
    )


@dataclass
class Checked:
    """One check's outcome, as the caller reports it."""

    target: Target
    result: FetchResult
    checked_at: datetime
    category: str
    status: str = ""  # the confirmed status after this check ("maintenance" inside a window)
    changed_from: str | None = None
    check_id: int | None = None
    failure: str = ""  # set by the monitor's own verdict (content); else the fetch's failure kind
    detail: str = ""
    tries: int = 1  # requests this check took (MONITOR_RETRIES); the result is the last one's

    @property
    def server_id(self) -> int:
        return self.target.server_id


# --------------------------------------------------------------------------------------------------
# Fetching: one MultiChecker per thread (libcurl multi; not thread-safe) runs a whole batch at once,
# MONITOR_THREADS checks in flight, the same parallelism per worker the thread pool of Fetchers had.

_local = threading.local()


def _policy() -> FetchPolicy:
    return FetchPolicy(
        connect_timeout=settings.CRAWL_CONNECT_TIMEOUT,
        header_timeout=settings.CRAWL_HEADER_TIMEOUT,
        body_timeout=settings.CRAWL_BODY_TIMEOUT,
        max_body_bytes=settings.CRAWL_MAX_BODY_BYTES,
        user_agent=settings.CRAWL_USER_AGENT,
        dns_timeout=settings.CRAWL_DNS_TIMEOUT,
    )


def _checker() -> MultiChecker:
    policy = _policy()
    checker: MultiChecker | None = getattr(_local, "checker", None)
    if checker is not None and checker.policy != policy:  # the settings changed (tests override them)
        checker.close()
        checker = None
    if checker is None:
        _local.checker = checker = MultiChecker(policy)
    checker.max_parallel = settings.MONITOR_THREADS
    return checker


def _guard(trusted: bool):
    """A trusted target (a trusted server's own host: trust.url_trusted) may be on any address; every other
    one gets the private-address guard."""
    return None if trusted else address_guard()


def _kind_guard(target):
    """A DNS check's own nameserver is guarded whatever the server's trust (trust.nameserver_refusal)."""
    if isinstance(target.spec, DnsSpec) and target.spec.nameserver:
        return address_guard()
    return _guard(target.trusted)


def checks_fetch(*, targets: Sequence[Target], retries: int | None = None) -> list[Checked]:
    """Fetch every target's health URL in parallel; nothing is written. Every check is a fresh
    connection (no keep-alive), so each one measures DNS, connect, first byte and body, as a check
    five minutes later would anyway. A target with unusable settings is not fetched: its check is an
    error whose detail says why. A disconnect or delay is tried again up to `retries` times
    (MONITOR_RETRIES when None): see checks_retry."""
    checked = _fetch_once(targets)
    retries = settings.MONITOR_RETRIES if retries is None else retries
    again = [c for c in checked if retry_wanted(c)] if retries else []
    if not again:
        return checked
    retried = {id(c.target): c for c in checks_retry(checked=again, retries=retries)}
    return [retried.get(id(c.target), c) for c in checked]


# Seed 002 tries a site again when it is disconnected or slow ("재확인", re-confirmation); a server that
# answers with an error answered, and one more request would only say so again.
RETRIED = frozenset({Category.DISCONNECT.value, Category.DELAY.value})


def retry_wanted(c: Checked) -> bool:
    # A heartbeat's check only reads the clock: asking again at once would say the same.
    return c.category in RETRIED and not c.target.problem and c.target.kind != Kind.HEARTBEAT.value


def checks_retry(*, checked: Sequence[Checked], retries: int, started: float | None = None) -> list[Checked]:
    """Try the disconnected and delayed checks again at once, all of them together through the client (one
    slow server holds up no other), at most `retries` more times each; a try that comes back normal or error
    ends that check. Each check keeps the time of its first try and the result of its last, with `tries`.

    Bounded: no new try starts once the round has run CRAWL_TASK_BUDGET seconds (from `started`, a
    time.monotonic(); now if None), so with the request deadlines the task stays inside its time limit
    however many servers hang; a check cut short so counts as failed with the tries it had.
    """
    started = time.monotonic() if started is None else started
    out = {id(c.target): c for c in checked}
    pending = [c for c in checked if retry_wanted(c)]
    for _ in range(retries):
        if not pending or time.monotonic() - started >= settings.CRAWL_TASK_BUDGET:
            break
        again = _fetch_once([c.target for c in pending])
        for first, last in zip(pending, again, strict=True):
            last.checked_at, last.tries = first.checked_at, first.tries + 1
            out[id(first.target)] = last
        pending = [c for c in again if retry_wanted(c)]
    return [out[id(c.target)] for c in checked]


def _fetch_once(targets: Sequence[Target]) -> list[Checked]:
    """One request (or TCP, DNS, heartbeat check) per target, no retries, as checks_fetch describes."""
    other = [t for t in targets if t.spec is not None and not t.problem]
    if not other:
        return _fetch_http(targets)
    ran = kinds_run(jobs=[(t.spec, _kind_guard(t), t.threshold_s) for t in other], policy=_policy())
    done = {id(t): _kind_checked(t, r) for t, r in zip(other, ran, strict=True)}
    rest = iter(_fetch_http([t for t in targets if id(t) not in done]))
    return [done[id(t)] if id(t) in done else next(rest) for t in targets]


def _kind_checked(target: Target, r) -> Checked:
    checked_at = datetime.fromtimestamp(r.started_at, UTC)
    result, detail = r.result, r.detail
    if r.failure == FailureKind.FORBIDDEN_ADDRESS.value:
        result, detail = replace(result, detail=REFUSED), REFUSED  # as an HTTP check's: see monitoring.services.trust
    return Checked(target, result, checked_at, r.category.value, failure=r.failure, detail=detail)


def _content_failure(target: Target, result) -> str | None:
    """Why the answer fails the monitor's content rule: in its body as served, or in the page a browser
    renders of it (the render agent's browsers, the same guard on each of the page's requests)."""
    if not target.content.rendered:
        return content_failure(result.body, target.content)
    dom = answer_render(url=result.url, status=result.status, headers=result.headers, body=result.body,
                        own_check=_guard(target.trusted))  # fmt: skip
    if isinstance(dom, str):
        return f"could not render the page: {dom}"
    return content_failure(dom, target.content)


def _fetch_http(targets: Sequence[Target]) -> list[Checked]:
    fetchable = [t for t in targets if not t.problem]
    guards = {trusted: _guard(trusted) for trusted in {t.trusted for t in fetchable}}
    requests = [
        CheckRequest(
            t.url,
            guards[t.trusted],
            keep_body=bool(t.content) or any(a.kind == "json" for a in t.assertions),
            keep_first_bytes=settings.EVIDENCE_BODY_BYTES,  # a failing answer's start is kept as evidence
        )
        for t in fetchable
    ]
    timed = iter(_checker().check_all(requests))  # never raises
    out = []
    for target in targets:
        if target.problem:
            log.warning("server %s not checked: unusable monitor settings (%s)", target.server_id, target.problem)
            out.append(Checked(target, _unchecked(target), timezone.now(), Category.ERROR.value))
            continue
        started_at, result = next(timed)
        if result.failure is FailureKind.FORBIDDEN_ADDRESS:
            result = replace(result, detail=REFUSED)  # not which address, nor why: see monitoring.services.trust
        latency_s = result.timings.total_ms / 1000.0
        category = classify(result.status, latency_s, target.threshold_s, target.accepted).value
        checked = Checked(target, result, datetime.fromtimestamp(started_at, UTC), category)
        if result.failure is FailureKind.TLS:
            # An expired, mismatched or untrusted certificate: the server answers, wrongly.
            checked.category = Category.ERROR.value
        elif target.content and category in (Category.NORMAL.value, Category.DELAY.value):
            why = _content_failure(target, result)
            if why is not None:
                checked.category, checked.failure, checked.detail = Category.ERROR.value, "content", why
        if target.assertions and checked.category in (Category.NORMAL.value, Category.DELAY.value):
            why = assertion_failure(
                target.assertions,
                status=result.status,
                headers=result.headers,
                body=result.body,
                total_ms=result.timings.total_ms,
            )
            if why is not None:
                checked.category, checked.failure, checked.detail = Category.ERROR.value, "assertion", why
        out.append(checked)
    return out


# --------------------------------------------------------------------------------------------------
# Writing


def _check_values(c: Checked) -> dict:
    """The StatusCheck row of one check, field name -> value."""
    r, t = c.result, c.result.timings
    return dict(
        server_id=c.target.server_id,
        requested_url=r.url,
        method=r.method,
        checked_at=c.checked_at,
        status_code=r.status,
        category=c.category,
        failure_kind=BAD_SETTINGS if c.target.problem else (c.failure or (r.failure.value if r.failure else "")),
        detail=(c.detail or r.detail)[:300],
        latency_ms=t.total_ms,
        dns_ms=t.dns_ms,
        connect_ms=t.connect_ms,
        first_byte_ms=t.first_byte_ms,
        body_ms=t.body_ms,
        bytes=r.bytes_received,
        agent=Agent.MONITOR.value,
        crawler_num=settings.CRAWLER_NUM,
        tries=c.tries,
    )


def _checks_insert(checked: Sequence[Checked]) -> None:
    """Insert the checks' StatusCheck rows and set each check_id (plain values, no model instances on
    PostgreSQL: see crawlcore.db.bulk.insert_returning_ids)."""
    ids = bulk.insert_returning_ids(StatusCheck, [_check_values(c) for c in checked])
    for c, pk in zip(checked, ids, strict=True):
        c.check_id = pk


_STATE_FIELDS = [
    "status",
    "status_since",
    "candidate",
    "streak",
    "last_check_at",
    "last_category",
    "next_check_at",
    "claim_token",
]


def checks_record(*, checked: Sequence[Checked], claimed_at: datetime | None = None) -> list[Checked]:
    """Write the checks and apply them to each server's confirmation state, all in one transaction.

    The monitors are locked (SELECT ... FOR UPDATE, in id order so two writers can't deadlock) while
    their state moves: two writers with checks of the same server apply them one after the other,
    and neither overwrites the other's streak. On SQLite the IMMEDIATE transaction does the same.
    """
    if not checked:
        return []
    ids = sorted({c.target.server_id for c in checked})
    with transaction.atomic():
        _checks_insert(checked)
        locked = ServerMonitor.objects.select_for_update().filter(server_id__in=ids).order_by("server_id")
        monitors = {m.server_id: m for m in locked.only("server_id", "locations", "quorum", *_STATE_FIELDS)}
        locations = _location_states([m for m in monitors.values() if m.locations])
        windows = maintenance_windows(
            server_ids=ids, start=min(c.checked_at for c in checked), end=max(c.checked_at for c in checked)
        )
        changes = []
        for c in sorted(checked, key=lambda c: c.checked_at):
            m = monitors.get(c.target.server_id)
            if m is None:  # its monitor was deleted meanwhile: the check stays, there is no state to move
                c.status = ""
                continue
            paused = in_window(windows.get(m.server_id, ()), c.checked_at)
            base = claimed_at or c.checked_at
            if m.locations:
                _apply_located(m, c, paused, changes, locations, base)
            else:
                _apply(m, c, paused, changes)
                m.claim_token = ""
            m.next_check_at = base + timedelta(seconds=c.target.interval_s)
        # One UPDATE ... FROM (VALUES ...) on PostgreSQL: bulk_update cost ~70% of a worker's time.
        bulk.update_rows(list(monitors.values()), _STATE_FIELDS)
        _location_states_save(locations)
        StatusChange.objects.bulk_create(changes)
        evidence_record(changes=changes, checked=checked)  # what the server answered, with the change
        incidents_from_changes(changes=changes)  # an outage people can read about, with the change
        _health_from_changes(changes)  # the crawl holds a server confirmed down and goes on when it is up
        hooks.status_changes_written(changes)  # alerts' outbox rows, in this same transaction
        certificates_record(checked=[c for c in checked if c.result.certificate is not None])
    return list(checked)


def _health_from_changes(changes: Sequence[StatusChange]) -> None:
    """A confirmed outage (disconnect, or error: the server answers, but not as it should) holds the server's
    crawl; a confirmed recovery releases it (crawlcore.services.health), in the transaction of the change."""
    down: dict[int, str] = {}
    up: set[int] = set()
    for change in sorted(changes, key=lambda c: c.at):
        to = Status(change.to_status)
        if to in BAD:
            down[change.server_id] = change.reason
            up.discard(change.server_id)
        elif to in GOOD:
            up.add(change.server_id)
            down.pop(change.server_id, None)
    for server_id, reason in down.items():
        health_hold(server_ids=[server_id], source=HealthSource.MONITOR, reason=reason)
    if up:
        health_release(server_ids=sorted(up), source=HealthSource.MONITOR)


def _state_of(m: ServerMonitor) -> Confirmation:
    """The stored confirmation state; a value no version of this code writes starts over from unknown
    rather than failing the whole batch's transaction."""
    try:
        status, candidate = Status(m.status), Status(m.candidate) if m.candidate else None
        if status not in CONFIRMED or (candidate is not None and candidate not in CONFIRMED):
            raise ValueError(status)
        return Confirmation(status, candidate, max(m.streak, 0))
    except ValueError:
        log.warning("server %s: unknown stored status %r / %r, starting over", m.server_id, m.status, m.candidate)
        return Confirmation()


def _apply(m: ServerMonitor, c: Checked, paused: bool, changes: list[StatusChange]) -> None:
    m.last_check_at = c.checked_at
    m.last_category = c.category
    if paused:
        # Inside a maintenance window a check is recorded but moves no status: a planned outage must
        # neither page anyone nor count as a confirmed failure once the window ends.
        c.status = Status.MAINTENANCE.value
        return
    state = _state_of(m)
    new, change = confirm(state, c.category, fail_after=c.target.fail_after, recover_after=c.target.recover_after)
    m.status, m.candidate, m.streak = new.status.value, new.candidate.value if new.candidate else "", new.streak
    c.status = m.status
    if change is not None:
        m.status_since = c.checked_at
        c.changed_from = change.from_status.value
        changes.append(
            StatusChange(
                server_id=m.server_id,
                from_status=change.from_status.value,
                to_status=change.to_status.value,
                at=c.checked_at,
                reason=change.reason[:200],
                status_check_id=c.check_id,
            )
        )


# --------------------------------------------------------------------------------------------------
# Several locations: each crawler number confirms on its own; a quorum of them moves the status.

_LOCATION_FIELDS = ["status", "candidate", "streak", "last_check_at", "last_category", "next_check_at", "claim_token"]


def _location_states(monitors: Sequence[ServerMonitor]) -> dict[tuple[int, int], LocationState]:
    """Every listed location's state of these monitors, made (unsaved) where a location has none yet."""
    if not monitors:
        return {}
    rows = LocationState.objects.filter(server_id__in=[m.server_id for m in monitors])
    states = {(s.server_id, s.crawler_num): s for s in rows}
    for m in monitors:
        for num in locations_parse(m.locations):
            states.setdefault((m.server_id, num), LocationState(server_id=m.server_id, crawler_num=num))
    return states


def _location_states_save(states: dict[tuple[int, int], LocationState]) -> None:
    if states:
        LocationState.objects.bulk_create(
            list(states.values()),
            update_conflicts=True,
            unique_fields=["server", "crawler_num"],
            update_fields=_LOCATION_FIELDS,
        )


def _apply_located(
    m: ServerMonitor,
    c: Checked,
    paused: bool,
    changes: list[StatusChange],
    states: dict[tuple[int, int], LocationState],
    base: datetime,
) -> None:
    """A check of a multi-location monitor moves the state of the location that made it (this worker's
    CRAWLER_NUM); the server's status then follows a quorum of the locations' confirmed statuses."""
    m.last_check_at, m.last_category = c.checked_at, c.category
    here = states.get((m.server_id, settings.CRAWLER_NUM)) if settings.CRAWLER_NUM is not None else None
    if here is None:  # checked from a crawler number not listed: recorded, counts for no location
        c.status = m.status
        return
    here.last_check_at, here.last_category, here.claim_token = c.checked_at, c.category, ""
    here.next_check_at = base + timedelta(seconds=c.target.interval_s)
    if paused:
        c.status = Status.MAINTENANCE.value
        return
    state = Confirmation(Status(here.status), Status(here.candidate) if here.candidate else None, here.streak)
    new, _ = confirm(state, c.category, fail_after=c.target.fail_after, recover_after=c.target.recover_after)
    here.status, here.candidate, here.streak = (
        new.status.value,
        new.candidate.value if new.candidate else "",
        new.streak,
    )
    nums = locations_parse(m.locations)
    seen = {n: Status(states[(m.server_id, n)].status) for n in nums}
    decided = quorum_decide(Status(m.status), seen, quorum_needed(len(nums), m.quorum))
    if decided is not None:
        change = StatusChange(
            server_id=m.server_id,
            from_status=m.status,
            to_status=decided.to_status.value,
            at=c.checked_at,
            reason=decided.reason[:200],
            status_check_id=c.check_id,
        )
        change.locations = decided.seen  # not a column: alerts' hook puts it in the message
        changes.append(change)
        m.status, m.status_since, c.changed_from = decided.to_status.value, c.checked_at, change.from_status
    c.status = m.status


# --------------------------------------------------------------------------------------------------
# Claiming and the entry points


# What target_of reads; the rest (the server's robots.txt, the load profile...) stays in the database.
_TARGET_FIELDS = [
    *("health_url", "interval_s", "delay_threshold_s", "accepted_codes", "fail_after", "recover_after"),
    *("content_must", "content_must_not", "content_regex", "content_rendered", "assertions"),
    *("server__scheme", "server__host", "server__port", "server__trusted"),
    *SPEC_FIELDS,
]


def _monitors(server_ids: Sequence[int]):
    qs = ServerMonitor.objects.filter(server_id__in=server_ids, enabled=True, server__enabled=True)
    return qs.select_related("server").only(*_TARGET_FIELDS)


def monitors_claim(*, server_ids: Sequence[int], now: datetime | None = None) -> list[ServerMonitor]:
    """Lease the due monitors among `server_ids`; the ones not due (already checked, or taken by another
    worker) are left alone. The lease pushes next_check_at forward, so a worker that dies mid-check
    leaves the server due again when the lease expires, and one poison server can't loop a worker."""
    now = now or timezone.now()
    token = secrets.token_hex(8)
    due = Q(next_check_at__isnull=True) | Q(next_check_at__lte=now)
    ServerMonitor.objects.filter(server_id__in=server_ids, enabled=True, locations="").filter(due).update(
        claim_token=token, next_check_at=lease_deadline(now), dispatched_at=None
    )
    # The guard was in the UPDATE: rows another claimer took in between carry its token, not ours.
    mine = list(_monitors(server_ids).filter(claim_token=token, locations=""))
    return mine + _located_claim(server_ids, token, now, due)


def _located_claim(server_ids: Sequence[int], token: str, now: datetime, due: Q) -> list[ServerMonitor]:
    """Multi-location monitors are claimed per location: every listed crawler number gets the message
    and checks the server once per interval, on its own LocationState row (same guarded UPDATE)."""
    here = settings.CRAWLER_NUM
    if here is None:
        return []
    located = [
        m for m in _monitors(server_ids).exclude(locations="").only("server_id", "locations")
        if here in locations_parse(m.locations)
    ]  # fmt: skip
    if not located:
        return []
    ids = [m.server_id for m in located]
    LocationState.objects.bulk_create(
        [LocationState(server_id=sid, crawler_num=here) for sid in ids], ignore_conflicts=True
    )
    states = LocationState.objects.filter(server_id__in=ids, crawler_num=here)
    states.filter(due).update(claim_token=token, next_check_at=lease_deadline(now))
    claimed = set(states.filter(claim_token=token).values_list("server_id", flat=True))
    return list(_monitors(sorted(claimed))) if claimed else []


def monitors_check(*, server_ids: Sequence[int], claim: bool = True) -> list[Checked]:
    """One round of checks of these servers. With claim=False (an operator's "check now") the servers
    are checked whether due or not; their schedule then restarts from this check."""
    now, started = timezone.now(), time.monotonic()
    monitors = monitors_claim(server_ids=server_ids, now=now) if claim else list(_monitors(server_ids))
    if not monitors:
        return []
    checked = checks_fetch(targets=[target_of(m) for m in monitors], retries=0)
    again = [c for c in checked if retry_wanted(c)] if settings.MONITOR_RETRIES else []
    # The servers that answered are written before the others are tried again: their status does not
    # wait (up to the retries' request deadlines) for a server that hangs.
    done = checks_record(checked=[c for c in checked if not (again and retry_wanted(c))], claimed_at=now)
    if again:
        retried = checks_retry(checked=again, retries=settings.MONITOR_RETRIES, started=started)
        done += checks_record(checked=retried, claimed_at=now)
    return done
