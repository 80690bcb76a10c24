"""A server's health: the rules that decide whether it may be sent crawl work now, and why not (pure).

Several parties learn something about a server, each writing its own part of one record
(crawlcore.models.ServerHealth, written by crawlcore.services.health alone):

* the operator pauses it (until a time, or until resumed);
* the monitor confirms it down, and up again;
* robots.txt answers 5xx or not at all (RFC 9309: assume complete disallow);
* the crawl meets 429 / 503 (a back-off), or slow answers and failures piling up (a longer delay);
* the hourly schedule (Hybrid-Sorting) pauses it until a better hour.

`summary` reads the parts and says the one state a reader shows: the strongest hold wins, in the order of
PRIORITY. The back-off and pacing rules are here too, so the simulator, the tests and the service share them.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


class HealthState(enum.StrEnum):
    HEALTHY = "healthy"
    SLOW = "slow"  # answers, but paced slower than politeness alone asks
    RATE_LIMITED = "rate_limited"  # asked us to wait (429, 503): nothing until `until`
    DOWN = "down"  # the monitor confirmed it down, or its robots.txt does not answer: one probe a window
    PAUSED = "paused"  # an operator, the hourly schedule, or an exclusion holds it


class HealthSource(enum.StrEnum):
    MONITOR = "monitor"
    CRAWL = "crawl"
    ROBOTS = "robots"
    SCHEDULE = "schedule"
    OPERATOR = "operator"


# The share of timeouts, resets and 5xx over the window that raises the server's delay, and the share below
# which the raised delay comes down again (a gap between the two, so the delay does not flap).
ERROR_RAISE_SHARE = 0.25
ERROR_LOWER_SHARE = 0.10


@dataclass(frozen=True)
class BackoffRule:
    """Header-less 429 / 503: `base` seconds, doubled on each repeat up to `cap`, ±`jitter`; the count of
    repeats is forgotten after `forgive` seconds without one. Retry-After is honoured up to `retry_after_cap`."""

    base: float = 60.0
    cap: float = 86400.0
    jitter: float = 0.10
    forgive: float = 1800.0
    retry_after_cap: float = 86400.0

    def strikes(self, previous: int, last_at: datetime | None, now: datetime) -> int:
        """The repeat this one is: 1 for the first, or after `forgive` seconds without one."""
        if last_at is None or (now - last_at).total_seconds() >= self.forgive:
            return 1
        return previous + 1

    def seconds(self, strikes: int, *, rng: random.Random | None = None) -> float:
        """The back-off of the `strikes`-th repeat (1-based), jittered and capped."""
        exponent = min(max(strikes, 1) - 1, 40)  # 2**40 × anything is past any cap already
        plain = min(self.base * (2.0**exponent), self.cap)
        spread = (rng or random).uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return min(plain * spread, self.cap)

    def first_longest(self) -> float:
        """The longest the first back-off (a held server's first probe window) can be, its jitter included."""
        return min(self.base * (1.0 + self.jitter), self.cap)

    def asked(self, retry_after: float | None) -> float | None:
        """A Retry-After's seconds within the cap; None when the answer carried none."""
        if retry_after is None:
            return None
        return max(0.0, min(retry_after, self.retry_after_cap))


@dataclass(frozen=True)
class PaceRule:
    """Nutch's rule: the delay between requests at least `factor` × the p95 response time of the last
    `window` answers, bounded by `cap`; failures (timeouts, resets, 5xx) over the window double a floor that
    halves back once they recover."""

    factor: float = 1.0
    window: int = 50
    cap: float = 30.0
    min_samples: int = 10
    # A pace by response time shorter than this is none: a server whose p95 is a few milliseconds is fast, and
    # spacing its requests by that much protects nothing while it costs a cluster-wide turn (a database
    # write) for every request and shows the server as slow.
    least: float = 0.05


@dataclass(frozen=True)
class Pace:
    p95_ms: float | None
    error_share: float
    delay: float  # seconds between request starts this server needs at least, over politeness alone
    error_floor: float  # the failures' part of it, carried to the next reading


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile (nearest rank) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(0.95 * len(ordered)))
    return ordered[rank - 1]


def pace(
    samples: Sequence[float | None], *, rule: PaceRule, base_delay: float, error_floor: float, new: int | None = None
) -> Pace:
    """The pace of a server from its last answers: `samples` are milliseconds, None for a failure (a
    timeout, a reset, a 5xx). `base_delay`: what politeness alone asks (robots.txt, the operator, the
    default); `error_floor`: the failures' floor of the previous reading; `new`: how many of the samples
    this reading adds (all when None). The floor doubles only while failures go on: a reading whose new
    answers all succeeded holds it, though the old failures still weigh on the window's share."""
    window = list(samples)[-rule.window :]
    times = [s for s in window if s is not None]
    failures = len(window) - len(times)
    share = failures / len(window) if window else 0.0
    fresh = window if new is None else window[len(window) - min(new, len(window)) :]
    floor = error_floor
    if len(window) >= rule.min_samples and share >= ERROR_RAISE_SHARE and None in fresh:
        floor = min(rule.cap, max(2.0 * error_floor, 2.0 * max(base_delay, 0.5)))
    elif share < ERROR_LOWER_SHARE and error_floor > 0:
        floor = error_floor / 2.0 if error_floor / 2.0 > base_delay else 0.0
    q = p95(times) if len(times) >= rule.min_samples else None
    by_time = rule.factor * q / 1000.0 if q is not None else 0.0
    if by_time < rule.least:
        by_time = 0.0
    delay = min(rule.cap, max(by_time, floor))
    return Pace(p95_ms=q, error_share=round(share, 3), delay=round(delay, 3), error_floor=round(floor, 3))


@dataclass(frozen=True)
class Parts:
    """Everything a ServerHealth row and its server say, as plain values (see summary)."""

    # operator
    paused_at: datetime | None = None
    paused_until: datetime | None = None
    paused_by: str = ""
    pause_note: str = ""
    # monitor
    down_since: datetime | None = None
    down_reason: str = ""
    # robots.txt
    robots_since: datetime | None = None
    robots_reason: str = ""
    probe_at: datetime | None = None  # a down or robots-held server's next probe may go then
    # crawl: back-off
    limited_at: datetime | None = None
    limited_until: datetime | None = None
    limited_reason: str = ""
    # crawl: pace
    paced_since: datetime | None = None
    pace_delay: float = 0.0
    base_delay: float = 0.0
    p95_ms: float | None = None
    error_share: float = 0.0
    # the server's own columns
    enabled: bool = True
    excluded_reason: str = ""
    schedule_until: datetime | None = None  # Hybrid-Sorting's pause (Server.paused_until)
    # what the last summary written said, for `since`
    healthy_since: datetime | None = None


@dataclass(frozen=True)
class Summary:
    state: HealthState
    source: str
    reason: str
    since: datetime | None
    until: datetime | None
    by: str = ""
    probe_at: datetime | None = None

    @property
    def held(self) -> bool:
        return self.state not in (HealthState.HEALTHY, HealthState.SLOW)

    def as_dict(self) -> dict:
        return {
            "state": self.state.value,
            "reason": self.reason,
            "source": self.source,
            "since": _iso(self.since),
            "until": _iso(self.until),
        }


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def _at(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if t is not None else ""


def summary(p: Parts, now: datetime) -> Summary:
    """The one state a reader shows, the strongest hold first: an operator's pause or disabling, the
    monitor's confirmed down, robots.txt unanswered, a back-off asked for, an exclusion, the hourly
    schedule's pause, then slow (paced), else healthy."""
    if p.paused_at is not None and (p.paused_until is None or p.paused_until > now):
        who = f" by {p.paused_by}" if p.paused_by else ""
        when = f" until {_at(p.paused_until)}" if p.paused_until else ""
        note = f": {p.pause_note}" if p.pause_note else ""
        return Summary(HealthState.PAUSED, HealthSource.OPERATOR, f"paused{who}{when}{note}", p.paused_at,
                       p.paused_until, by=p.paused_by)  # fmt: skip
    if not p.enabled:
        return Summary(HealthState.PAUSED, HealthSource.OPERATOR, "disabled by an operator", None, None)
    if p.down_since is not None:
        probe = f"; one probe request at {_at(p.probe_at)} at the earliest" if p.probe_at and p.probe_at > now else ""
        reason = f"the monitor confirmed it down ({p.down_reason}){probe}" if p.down_reason else f"down{probe}"
        return Summary(HealthState.DOWN, HealthSource.MONITOR, reason, p.down_since, None, probe_at=p.probe_at)
    if p.robots_since is not None:
        reason = f"robots.txt did not answer ({p.robots_reason}): complete disallow until it does"
        return Summary(HealthState.DOWN, HealthSource.ROBOTS, reason, p.robots_since, p.probe_at, probe_at=p.probe_at)
    if p.limited_until is not None and p.limited_until > now:
        return Summary(HealthState.RATE_LIMITED, HealthSource.CRAWL, p.limited_reason or "backing off", p.limited_at,
                       p.limited_until)  # fmt: skip
    if p.excluded_reason:
        return Summary(HealthState.PAUSED, HealthSource.CRAWL, f"excluded: {p.excluded_reason}", None, None)
    if p.schedule_until is not None and p.schedule_until > now:
        return Summary(HealthState.PAUSED, HealthSource.SCHEDULE,
                       "paused by the hourly schedule until a less loaded hour", None, p.schedule_until)  # fmt: skip
    if p.pace_delay > p.base_delay + 1e-6:
        figures = [f"{p.pace_delay:.2f} s between requests"]
        if p.p95_ms is not None:
            figures.append(f"p95 {p.p95_ms:.0f} ms")
        if p.error_share:
            figures.append(f"{p.error_share:.0%} timeouts or 5xx")
        return Summary(HealthState.SLOW, HealthSource.CRAWL, "slowed: " + ", ".join(figures), p.paced_since, None)
    return Summary(HealthState.HEALTHY, "", "", p.healthy_since, None)


def probe_window(rule: BackoffRule, strikes: int, *, rng: random.Random | None = None) -> timedelta:
    """How long a down or robots-held server waits for its next probe after `strikes` probes that failed."""
    return timedelta(seconds=rule.seconds(strikes + 1, rng=rng))


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def until_parse(text: str, now: datetime, tz=None) -> datetime:
    """An operator's "until": a span from now (`90s`, `30m`, `2h`, `1d`, `1w`) or a time (ISO 8601, e.g.
    `2026-05-01T18:00`, read in `tz` when it names no zone). ValueError with the reason otherwise, or when the
    time is not in the future."""
    raw = text.strip()
    unit = raw[-1:].lower()
    if unit in _UNITS and raw[:-1].replace(".", "", 1).isdigit():
        seconds = float(raw[:-1]) * _UNITS[unit]
        if seconds <= 0:
            raise ValueError(f"{text!r}: a span must be more than nothing")
        return now + timedelta(seconds=seconds)
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"{text!r}: not a time (2026-05-01T18:00) nor a span (30m, 2h, 1d)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz or now.tzinfo)
    if when <= now:
        raise ValueError(f"{text!r} is not in the future")
    return when
