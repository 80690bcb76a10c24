"""Running the checks of TCP, DNS and heartbeat monitors (monitoring.kinds) for a round of
monitoring.services.check_fetch: each monitor's spec from its row, and the checks of a batch in parallel
(MONITOR_THREADS at once; every check has its own phase deadlines, so the batch ends within them). The round
also has a deadline of its own, from those phase deadlines: a check that overruns them (a call that ignores
its timeout) is given up as a disconnect there, so no check can hold the round, or the task, past it."""

from __future__ import annotations

import concurrent.futures
import math
import time
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from crawler.http import AddressCheck, FailureKind, FetchPolicy, Timings
from crawler.status import Category

from ..kinds import Kind, KindResult, result_of
from ..kinds.dns import DnsSpec, DnsSpecError, dns_check, dns_name_check, expected_parse, record_type_check
from ..kinds.heartbeat import HeartbeatSpec, heartbeat_check
from ..kinds.tcp import TcpSpec, tcp_check
from ..models import ServerMonitor

Spec = TcpSpec | DnsSpec | HeartbeatSpec

# What spec_of reads of a monitor besides what target_of reads.
SPEC_FIELDS = (
    *("kind", "name", "tcp_tls", "tcp_banner", "dns_record_type", "dns_expected", "dns_server"),
    *("period_s", "grace_s", "last_ping_at", "last_ping_kind", "ping_started_at", "server__created_at"),
)


def spec_of(monitor: ServerMonitor) -> tuple[Spec | None, str]:
    """(spec, problem) of a non-HTTP monitor; (None, "") for HTTP. A row that cannot be checked (a value
    written past the admin's validation) has no spec and says why."""
    server = monitor.server
    try:
        kind = Kind(monitor.kind or Kind.HTTP.value)
    except ValueError:
        return None, f"kind: {monitor.kind!r} is not one of {', '.join(k.value for k in Kind)}"
    if kind is Kind.HTTP:
        return None, ""
    if kind is Kind.TCP:
        return TcpSpec(server.host, server.port, monitor.tcp_tls, monitor.tcp_banner), ""
    if kind is Kind.DNS:
        try:
            name, rtype = dns_name_check(server.host), record_type_check(monitor.dns_record_type)
        except DnsSpecError as exc:
            return None, f"dns: {exc}"
        return DnsSpec(name, rtype, expected_parse(monitor.dns_expected), monitor.dns_server), ""
    if not monitor.period_s or not monitor.grace_s or monitor.period_s <= 0 or monitor.grace_s < 0:
        return None, "heartbeat: period and grace must be positive seconds"
    spec = HeartbeatSpec(
        name=monitor.name or server.host,
        period_s=monitor.period_s,
        grace_s=monitor.grace_s,
        since=server.created_at,
        last_ping_at=monitor.last_ping_at,
        last_ping_kind=monitor.last_ping_kind,
        started_at=monitor.ping_started_at,
    )
    return spec, ""


def _run_one(spec: Spec, policy: FetchPolicy, guard: AddressCheck | None, threshold_s: float, now: datetime):
    if isinstance(spec, TcpSpec):
        return tcp_check(spec, policy=policy, guard=guard, threshold_s=threshold_s)
    if isinstance(spec, DnsSpec):
        return dns_check(spec, timeout=policy.dns_timeout, guard=guard, threshold_s=threshold_s)
    return heartbeat_check(spec, now=now)


ROUND_SLACK_S = 1.0  # past the checks' own deadlines: thread start, scheduling, the results' assembly


def round_deadline_s(policy: FetchPolicy, jobs: int, threads: int) -> float:
    """How long a round of `jobs` kind checks on `threads` threads may take: each check ends within its own
    phase deadlines (a TCP check's lookup, connect with TLS, banner; a DNS check's lookup within dns_timeout;
    a heartbeat at once), and the checks run in waves of `threads`. Never past CRAWL_TASK_BUDGET, the
    round's budget (as check_fetch's retries have it), so the task stays inside its time limit."""
    per_check = policy.dns_timeout + policy.connect_timeout + policy.header_timeout
    return min(math.ceil(jobs / threads) * per_check + ROUND_SLACK_S, settings.CRAWL_TASK_BUDGET)


def _given_up(spec: Spec, started_at: float, waited_s: float) -> KindResult:
    """The result standing in for a check that had not ended when the round's deadline came."""
    if isinstance(spec, TcpSpec | DnsSpec):
        target, method = spec.target, "TCP" if isinstance(spec, TcpSpec) else "DNS"
    else:
        target, method = f"heartbeat:{spec.name}"[:300], "PING"
    detail = f"no result within the round's deadline ({waited_s:g}s)"
    timings = Timings(None, None, None, None, waited_s * 1000)
    result = result_of(target, method, timings=timings, detail=detail, failure=FailureKind.OTHER)
    return KindResult(started_at, result, Category.DISCONNECT, "deadline", detail)


def kinds_run(*, jobs: Sequence[tuple[Spec, AddressCheck | None, float]], policy: FetchPolicy) -> list[KindResult]:
    """Check every (spec, guard, delay threshold), in order; never raises for a network reason. Returns by
    round_deadline_s: a check still running then is given up (its thread is left to end on its own)."""
    if not jobs:
        return []
    now, started_wall, started = timezone.now(), time.time(), time.monotonic()
    threads = min(settings.MONITOR_THREADS, len(jobs))
    deadline_s = round_deadline_s(policy, len(jobs), threads)
    pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="monitor-kind")
    try:
        futures = [pool.submit(_run_one, spec, policy, guard, threshold, now) for spec, guard, threshold in jobs]
        concurrent.futures.wait(futures, timeout=deadline_s)
        waited = time.monotonic() - started
        return [
            f.result() if f.done() else _given_up(spec, started_wall, round(waited, 3))
            for f, (spec, _, _) in zip(futures, jobs, strict=True)
        ]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a check past the deadline holds no one
