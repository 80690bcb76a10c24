"""A round's requests: each target checked by its kind (HTTP through check_http, TCP, DNS and heartbeat
through monitoring.services.kinds), then the disconnected and delayed ones tried again. Nothing here
writes: the round (monitoring.services.checks) records what this returns.

Retries (MONITOR_RETRIES, seed 002's retry count): a check that ends in disconnect or delay is tried again
at once, within the round, before it counts; the round still writes one row per server (its `tries` say how
many requests it took). The confirmation rule (monitoring/confirm.py) then counts rounds, not tries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from django.conf import settings

from crawler.http import FailureKind
from crawler.status import Category

from ..kinds import Kind
from ..kinds.dns import DnsSpec
from .check_http import check_guard, check_policy, fetch_http
from .check_targets import Checked, Target
from .kinds import kinds_run
from .trust import REFUSED, address_guard


def _kind_guard(target):
    """A DNS check's own nameserver is guarded whatever the server's trust (trust.nameserver_refusal)."""
    if isinstance(target.spec, DnsSpec) and target.spec.nameserver:
        return address_guard()
    return check_guard(target.trusted)


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
        return fetch_http(targets)
    ran = kinds_run(jobs=[(t.spec, _kind_guard(t), t.threshold_s) for t in other], policy=check_policy())
    done = {id(t): _kind_checked(t, r) for t, r in zip(other, ran, strict=True)}
    rest = iter(fetch_http([t for t in targets if id(t) not in done]))
    return [done[id(t)] if id(t) in done else next(rest) for t in targets]


def _kind_checked(target: Target, r) -> Checked:
    checked_at = datetime.fromtimestamp(r.started_at, UTC)
    result, detail = r.result, r.detail
    if r.failure == FailureKind.FORBIDDEN_ADDRESS.value:
        result, detail = replace(result, detail=REFUSED), REFUSED  # as an HTTP check's: see monitoring.services.trust
    return Checked(target, result, checked_at, r.category.value, failure=r.failure, detail=detail)
