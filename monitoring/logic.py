"""HTTP-status monitoring, the pure part (seed 002: status collection; seed 000: hourly load).

No Django or Celery import: the data layer calls these functions and persists what they return.

* ``AcceptedCodes`` / ``classify``: the four categories, with a per-server set of accepted codes.
* ``Confirmation`` / ``confirm``: a server's status changes only after enough checks agree.
* ``latency_stats`` / ``uptime`` / ``load_profile``: the arithmetic of rollups, uptime and the
  24-hour load profile the load-aware scheduler reads.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crawler.status import Category, categorize
from crawler.urlnorm import UrlError, canonicalize, server_key

# --------------------------------------------------------------------------------------------------
# Categories


class AcceptedCodesError(ValueError):
    pass


@dataclass(frozen=True)
class AcceptedCodes:
    """The status codes a server may answer with and still be up. Empty: the default rule (2xx/3xx).

    Written as a comma list of codes and ranges: ``"200,301-302,401"``.
    """

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> AcceptedCodes:
        ranges: list[tuple[int, int]] = []
        for part in text.replace(" ", "").split(","):
            if not part:
                continue
            low, sep, high = part.partition("-")
            try:
                lo, hi = int(low), int(high if sep else low)
            except ValueError:
                raise AcceptedCodesError(f"{part!r} is not a status code or a range like 200-299") from None
            if not (100 <= lo <= hi <= 599):
                raise AcceptedCodesError(f"{part!r}: codes must be within 100-599, low to high")
            ranges.append((lo, hi))
        return cls(tuple(sorted(set(ranges))))

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)

    def __contains__(self, status: object) -> bool:
        return isinstance(status, int) and any(lo <= status <= hi for lo, hi in self.ranges)


def classify(status: int | None, latency_s: float, threshold_s: float, accepted: AcceptedCodes) -> Category:
    """The category of one check. With accepted codes set, a code outside them is an *error* even when
    it is 2xx/3xx, and a code inside them (say 401 on a protected health page) is normal or delay."""
    if not accepted.ranges or status is None:
        return categorize(status, latency_s, threshold_s)
    if status not in accepted:
        return Category.ERROR
    return Category.DELAY if latency_s > threshold_s else Category.NORMAL


# --------------------------------------------------------------------------------------------------
# Confirmed status changes


class Status(enum.StrEnum):
    """A server's confirmed status: one of the four categories, or unknown before the first one."""

    UNKNOWN = "unknown"
    NORMAL = "normal"
    DELAY = "delay"
    DISCONNECT = "disconnect"
    ERROR = "error"


GOOD = frozenset({Status.NORMAL, Status.DELAY})
BAD = frozenset({Status.DISCONNECT, Status.ERROR})


@dataclass(frozen=True)
class Confirmation:
    """Where a server stands: its confirmed status and the checks that disagree with it so far.

    ``candidate`` is what the disagreeing checks point to and ``streak`` how many there were in a row.
    """

    status: Status = Status.UNKNOWN
    candidate: Status | None = None
    streak: int = 0


@dataclass(frozen=True)
class Change:
    from_status: Status
    to_status: Status
    reason: str


def _is_recovery(current: Status, target: Status) -> bool:
    """Recovery: to a good status from a bad or unknown one, or from delay back to normal."""
    return target in GOOD and (current not in GOOD or target is Status.NORMAL)


def confirm(
    state: Confirmation, check: Category | str, *, fail_after: int, recover_after: int
) -> tuple[Confirmation, Change | None]:
    """Apply one check to a server's confirmation state; return the new state and the change, if any.

    The rule (issue 4): it takes ``fail_after`` (N) checks in a row to go down to disconnect or error,
    and ``recover_after`` (M) good ones (normal or delay) to count as recovered. Every other move
    (normal -> delay, disconnect <-> error) is a degradation or a change of failure and needs N.

    Which checks count "in a row": when the move crosses between good and bad, any check on the
    target's side (a disconnect and then an error are two failures in a row, and the status becomes
    the latest one); within one side, only checks of exactly the target category.
    """
    seen = Status(Category(check).value)
    current = state.status
    if seen is current:
        return Confirmation(current), None
    crossing = current is Status.UNKNOWN or ((seen in GOOD) != (current in GOOD))
    prev = state.candidate
    if prev is None:
        continued = False
    elif crossing:
        continued = (prev in GOOD) == (seen in GOOD)  # same side: the same crossing move
    else:
        continued = prev is seen
    streak = state.streak + 1 if continued else 1
    need = recover_after if _is_recovery(current, seen) else fail_after
    if streak >= need:
        reason = f"{streak} {'check' if streak == 1 else 'checks in a row'}: {seen.value}"
        return Confirmation(seen), Change(current, seen, reason)
    return Confirmation(current, seen, streak), None


# --------------------------------------------------------------------------------------------------
# Rollups, uptime, load profile


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (PostgreSQL's percentile_cont) of an ascending sequence."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


@dataclass(frozen=True)
class LatencyStats:
    count: int
    min_ms: float
    mean_ms: float
    p95_ms: float
    max_ms: float


def latency_stats(values: Iterable[float]) -> LatencyStats | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return LatencyStats(
        count=len(ordered),
        min_ms=ordered[0],
        mean_ms=sum(ordered) / len(ordered),
        p95_ms=percentile(ordered, 95),
        max_ms=ordered[-1],
    )


@dataclass
class CategoryCounts:
    normal: int = 0
    delay: int = 0
    disconnect: int = 0
    error: int = 0
    maintenance: int = 0  # checks inside a maintenance window: shown, but left out of uptime

    def add(self, other: CategoryCounts) -> None:
        for name in ("normal", "delay", "disconnect", "error", "maintenance"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def counted(self) -> int:
        """Checks that count for uptime (maintenance excluded)."""
        return self.normal + self.delay + self.disconnect + self.error


@dataclass(frozen=True)
class Uptime:
    """Shares of the counted checks, in percent; None when there were none."""

    checks: int
    maintenance: int
    up: float | None  # normal + delay: the server answered as it should
    shares: dict[str, float | None] = field(default_factory=dict)


def uptime(counts: CategoryCounts) -> Uptime:
    """Uptime as the share of checks (checks come at a fixed interval, so a share of checks is a share
    of time) that were normal or delay; maintenance checks are in neither numerator nor denominator."""
    n = counts.counted
    shares = {c.value: (100.0 * getattr(counts, c.value) / n if n else None) for c in Category}
    up = 100.0 * (counts.normal + counts.delay) / n if n else None
    return Uptime(checks=n, maintenance=counts.maintenance, up=up, shares=shares)


def load_profile(rows: Iterable[tuple[int, int, float]]) -> list[float | None]:
    """The 24-hour load profile: mean response time (ms) per hour of day.

    ``rows``: (hour of day 0-23, number of timed checks, their mean latency in ms), one per hourly
    rollup. Each hour's value is the check-weighted mean over all its rollups; None with no data.
    """
    weight = [0] * 24
    total = [0.0] * 24
    for hour, count, mean_ms in rows:
        if count > 0:
            weight[hour] += count
            total[hour] += count * mean_ms
    return [total[h] / weight[h] if weight[h] else None for h in range(24)]


@dataclass(frozen=True)
class CheckSample:
    """What a rollup needs of one raw check."""

    category: str
    status: int | None
    latency_ms: float
    in_maintenance: bool


def summarize(samples: Iterable[CheckSample]) -> tuple[CategoryCounts, LatencyStats | None]:
    """One hourly rollup: checks per category (maintenance apart) and the latency of answered checks.

    A disconnect's "latency" is how long we waited before giving up, not a response time, so only
    checks that got an HTTP response (outside maintenance) enter the latency figures.
    """
    counts = CategoryCounts()
    timed: list[float] = []
    for s in samples:
        if s.in_maintenance:
            counts.maintenance += 1
            continue
        setattr(counts, s.category, getattr(counts, s.category) + 1)
        if s.status is not None:
            timed.append(s.latency_ms)
    return counts, latency_stats(timed)


# --------------------------------------------------------------------------------------------------
# Server list rows (import_servers)

COLUMNS = ("host_or_url", "group", "crawler_num", "interval_s", "delay_threshold_s", "accepted_codes", "owner_email")
MIN_INTERVAL_S = 10.0
MAX_INTERVAL_S = 7 * 86400.0
MAX_THRESHOLD_S = 600.0


_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


class RowError(ValueError):
    pass


@dataclass(frozen=True)
class ServerRow:
    scheme: str
    host: str
    port: int
    health_url: str  # "" when it is the home page
    group: str
    crawler_num: int | None
    interval_s: float | None
    delay_threshold_s: float | None
    accepted_codes: str
    owner_email: str = ""  # the server owner's contact: alerts sends them their server's events


def is_header(cells: Sequence[str]) -> bool:
    return bool(cells) and cells[0].strip().lower() in {"host", "url", "host_or_url", "server"}


def _number(text: str, name: str, low: float, high: float) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"{name} {text!r} is not a number") from None
    if not (low <= value <= high):  # also refuses nan
        raise RowError(f"{name} {text!r} must be within {low:g}-{high:g}")
    return value


def parse_server_row(cells: Sequence[str]) -> ServerRow:
    """One line of a server list: host or URL, group, crawler number, check interval (s), delay threshold
    (s), accepted codes. Only the first is required; empty fields take the MONITOR_* defaults."""
    if len(cells) > len(COLUMNS):
        raise RowError(f"{len(cells)} fields, at most {len(COLUMNS)} expected ({', '.join(COLUMNS)})")
    cells = [c.strip() for c in cells] + [""] * (len(COLUMNS) - len(cells))
    target, group, crawler, interval, threshold, codes, owner = cells
    if not target:
        raise RowError("host or URL is empty")
    url = target if "://" in target else f"http://{target}/"
    try:
        canonical = canonicalize(url)
        key = server_key(canonical)
    except UrlError as exc:
        raise RowError(f"{target!r} is not a usable host or http(s) URL ({exc.reason})") from None
    if len(group) > 100:
        raise RowError("group is longer than 100 characters")
    crawler_num = None
    if crawler:
        if not crawler.isdigit() or int(crawler) > 10_000:
            raise RowError(f"crawler number {crawler!r} must be a whole number 0-10000")
        crawler_num = int(crawler)
    try:
        accepted = str(AcceptedCodes.parse(codes))
    except AcceptedCodesError as exc:
        raise RowError(f"accepted codes: {exc}") from None
    if owner and not _EMAIL.match(owner):
        raise RowError(f"owner {owner!r} is not an e-mail address")
    home = f"{key.origin()}/"
    return ServerRow(
        scheme=key.scheme,
        host=key.host,
        port=key.port,
        health_url="" if canonical == home else canonical,
        group=group,
        crawler_num=crawler_num,
        interval_s=_number(interval, "interval", MIN_INTERVAL_S, MAX_INTERVAL_S),
        delay_threshold_s=_number(threshold, "delay threshold", 0.0, MAX_THRESHOLD_S),
        accepted_codes=accepted,
        owner_email=owner,
    )
