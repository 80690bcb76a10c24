"""Running the checks of TCP, DNS and heartbeat monitors (monitoring.kinds) for a round of
monitoring.services.checks: each monitor's spec from its row, and the checks of a batch in parallel
(MONITOR_THREADS at once; every check has its own phase deadlines, so the batch ends within them)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from crawler.http import FetchPolicy

from ..kinds import Kind, KindResult
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


AddressCheck = Callable[[str], "str | None"]


def _run_one(spec: Spec, policy: FetchPolicy, guard: AddressCheck | None, threshold_s: float, now: datetime):
    if isinstance(spec, TcpSpec):
        return tcp_check(spec, policy=policy, guard=guard, threshold_s=threshold_s)
    if isinstance(spec, DnsSpec):
        return dns_check(spec, timeout=policy.dns_timeout, guard=guard, threshold_s=threshold_s)
    return heartbeat_check(spec, now=now)


def kinds_run(*, jobs: Sequence[tuple[Spec, AddressCheck | None, float]], policy: FetchPolicy) -> list[KindResult]:
    """Check every (spec, guard, delay threshold), in order; never raises for a network reason."""
    if not jobs:
        return []
    now = timezone.now()
    threads = min(settings.MONITOR_THREADS, len(jobs))
    if threads == 1:
        return [_run_one(spec, policy, guard, threshold, now) for spec, guard, threshold in jobs]
    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="monitor-kind") as pool:
        futures = [pool.submit(_run_one, spec, policy, guard, threshold, now) for spec, guard, threshold in jobs]
        return [f.result() for f in futures]
