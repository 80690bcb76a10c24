"""A heartbeat: a job (a nightly backup, a cron script) pings the monitor's URL, ``/ping/<token>``, each
time it runs; ``/start`` when it begins and ``/fail`` when it failed. A check of the heartbeat asks only
the clock:

* the last ping was ``/fail``                                            -> error (``fail_signal``)
* a run started (``/start``) and did not finish within the grace         -> disconnect (``unfinished``)
* no ping for longer than period + grace (since the monitor was added
  when it was never pinged)                                              -> disconnect (``late``)
* otherwise                                                              -> normal

So a late job is a failed check like any other and goes through the same confirmation, timeline and
alerts. No location quorum: a ping reaches the one database, wherever the job runs.

No Django or Celery import.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from crawler.http import Timings
from crawler.status import Category

from . import KindResult, result_of

SUCCESS, START, FAIL = "success", "start", "fail"
PING_KINDS = (SUCCESS, START, FAIL)
TOKEN_BYTES = 24  # 192 bits: unguessable; the token is the only secret of the ping URL
MIN_CHECK_INTERVAL_S = 10.0
MAX_CHECK_INTERVAL_S = 60.0


def token_new() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def check_interval(period_s: float, grace_s: float) -> float:
    """How often a heartbeat is looked at: often enough that lateness is seen well within the grace."""
    return max(MIN_CHECK_INTERVAL_S, min(MAX_CHECK_INTERVAL_S, grace_s / 4, period_s / 4))


@dataclass(frozen=True)
class HeartbeatSpec:
    name: str  # shown as the check's target, never the token
    period_s: float
    grace_s: float
    since: datetime  # the monitor was added (or reset) then: the clock of one never pinged
    last_ping_at: datetime | None = None
    last_ping_kind: str = ""  # success or fail
    started_at: datetime | None = None


def heartbeat_verdict(spec: HeartbeatSpec, now: datetime) -> tuple[Category, str, str]:
    """(category, failure kind, detail) of a heartbeat at `now`."""
    last = spec.last_ping_at
    if last is not None and spec.last_ping_kind == FAIL:
        return Category.ERROR, "fail_signal", f"the job reported a failure at {last:%Y-%m-%d %H:%M:%S} UTC"
    started = spec.started_at
    if started is not None and (last is None or started > last):
        if (now - started).total_seconds() > spec.grace_s:
            return (
                Category.DISCONNECT,
                "unfinished",
                (f"a run started at {started:%Y-%m-%d %H:%M:%S} UTC and did not finish within {spec.grace_s:g}s"),
            )
    reference = last or spec.since
    quiet = (now - reference).total_seconds()
    if quiet > spec.period_s + spec.grace_s:
        what = "never pinged in the" if last is None else "no ping for"
        return (
            Category.DISCONNECT,
            "late",
            (f"{what} {quiet:.0f}s (period {spec.period_s:g}s + grace {spec.grace_s:g}s)"),
        )
    return Category.NORMAL, "", ""


def heartbeat_check(spec: HeartbeatSpec, *, now: datetime) -> KindResult:
    category, failure, detail = heartbeat_verdict(spec, now)
    result = result_of(
        f"heartbeat:{spec.name}"[:300], "PING", timings=Timings(None, None, None, None, 0.0), detail=detail
    )
    return KindResult(now.timestamp(), result, category, failure, detail)
