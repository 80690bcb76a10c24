"""Freshness objectives: how stale a page's stored copy is, the percentiles over an objective's
pages, whether its target holds, and the requests a day it would take to hold it.

Staleness of a page is the time since its stored copy stopped being current (the benchmark's *age*). We
never see that moment; we know when the copy was last found current (`since_current`: the last check that
fetched it or confirmed it unchanged) and the page's change rate λ (seed 004's estimator, Cho &
Garcia-Molina 2003, the one crawlcore.services.recrawl_choice computes in SQL). With changes at rate λ
(Poisson), a copy found current τ ago is stale by, on average,

    a(τ) = τ − (1 − e^(−λτ)) / λ

(0 right after the check, τ − 1/λ long after it). The objective's p50/p95 are percentiles of a(τ) over its
pages. The budget a target needs: a page checked every I seconds is at most a(I) stale on average just before
each check, so the longest interval that keeps it within the target T solves a(I) = T; a check is a HEAD
and, when it finds a change (probability 1 − e^(−λI)), a reload. The 5 % of pages (for a p95 target) that
would cost most may miss it; the rest's requests, summed per server, give the budget needed per server and
day: the largest of those sums.

Lastmod honesty is read the same way: of the changes a server's sitemap `lastmod` announced, the share a
check confirmed (precision), and of the changes checks found, the share `lastmod` had announced (recall);
the score is their product, so a server must be right both ways (a sitemap that says every page changed
now has recall 1 and precision near 0).

Pure: no Django, no Celery; times in seconds.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DAY = 86_400.0
LONGEST_INTERVAL = 30 * DAY  # a page that (almost) never changes is still checked once a month
HONESTY_THRESHOLD = 0.5  # below it, a server's lastmod no longer makes its pages due
TOP_PAGES = re.compile(r"^top:([1-9][0-9]{0,6})$")


class PagesError(ValueError):
    """An objective's `pages` that is neither `all`, `top:N` nor a valid path regex (one line)."""


@dataclass(frozen=True)
class Pages:
    """Which pages an objective covers: kind "all", "top" (the N best by rank) or "regex" (on the URL path)."""

    kind: str
    top: int = 0
    pattern: str = ""

    @property
    def text(self) -> str:
        return "all" if self.kind == "all" else f"top:{self.top}" if self.kind == "top" else self.pattern


def pages_parse(text: object) -> Pages:
    """`all`, `top:N` (1 ≤ N < 10⁷) or a regular expression on the URL path; PagesError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise PagesError("must be all, top:N or a regular expression on the URL path")
    text = text.strip()
    if text == "all":
        return Pages("all")
    match = TOP_PAGES.match(text)
    if match:
        return Pages("top", top=int(match.group(1)))
    if text.startswith("top:"):
        raise PagesError(f"{text!r}: top:N needs a whole number N from 1")
    if len(text) > 500:
        raise PagesError("a path regular expression of at most 500 characters")
    try:
        re.compile(text)
    except re.error as exc:
        raise PagesError(f"{text!r} is not a regular expression ({exc})") from None
    return Pages("regex", pattern=text)


def change_rate(*, checks: int, changed: int, watched: float, prior: float) -> float:
    """λ, changes per second: Cho & Garcia-Molina's estimator over `checks` checks spanning `watched` seconds,
    `changed` of which found a change, with a prior of `prior` changes per second weighing as one check (the
    SQL of crawlcore.services.recrawl_choice._change_rate, term for term)."""
    n, x = float(max(0, checks)), float(min(max(0, changed), max(0, checks)))
    evidence = -math.log((n - x + 0.5) / (n + 0.5)) * n * n if n else 0.0
    return (evidence / max(watched, 1.0) + prior) / (n + 1.0)


def expected_staleness(rate: float, since_current: float) -> float:
    """a(τ): the expected time a copy found current `since_current` seconds ago has been stale."""
    tau = max(0.0, since_current)
    if rate <= 0 or tau == 0:
        return 0.0
    x = rate * tau
    if x < 1e-6:  # 1 − e^(−x) ≈ x − x²/2: the subtraction below would lose every digit
        return rate * tau * tau / 2
    return tau - (1.0 - math.exp(-x)) / rate


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0–100) by linear interpolation between closest ranks; None of no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * min(100.0, max(0.0, q)) / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def interval_for(rate: float, target: float) -> float:
    """The longest check interval I (seconds, at most LONGEST_INTERVAL) with a(I) ≤ target: a is increasing,
    so bisection; 60 halvings leave no float to gain."""
    if target <= 0:
        return 0.0
    if expected_staleness(rate, LONGEST_INTERVAL) <= target:
        return LONGEST_INTERVAL
    low, high = target, LONGEST_INTERVAL  # a(I) ≤ I, so I = target always holds
    for _ in range(60):
        mid = (low + high) / 2
        if expected_staleness(rate, mid) <= target:
            low = mid
        else:
            high = mid
    return low


def requests_per_day(rate: float, interval: float) -> float:
    """Requests a day of checking a page every `interval` seconds: a check, and a reload when it changed."""
    if interval <= 0:
        return math.inf
    return DAY / interval * (1.0 + (1.0 - math.exp(-max(rate, 0.0) * interval)))


@dataclass(frozen=True)
class PageState:
    """One page of an objective as the arithmetic needs it: its server, its change rate (per second) and the
    seconds since it was last found current (None: never fetched; it counts as stale since `since_current`
    is unknown, and is left out of the percentiles)."""

    server: int
    rate: float
    since_current: float | None


def staleness_of(pages: Iterable[PageState]) -> list[float]:
    return [expected_staleness(p.rate, p.since_current) for p in pages if p.since_current is not None]


def target_met(p95: float | None, target: float) -> bool:
    """The target holds when the p95 staleness is at most the target (no page measured: it holds)."""
    return p95 is None or p95 <= target


def budget_needed(pages: Sequence[PageState], target: float, *, quantile: float = 95.0) -> int:
    """Requests per server and day that would hold `target` at the given quantile: each page checked at
    interval_for(its rate), the costliest (100 − quantile) % of pages left to miss, summed per server, the
    largest sum (rounded up). 0 when there are no pages."""
    needs = sorted(
        ((requests_per_day(p.rate, interval_for(p.rate, target)), p.server) for p in pages),
        key=lambda pair: pair[0],
    )
    keep = math.ceil(len(needs) * quantile / 100.0)
    per_server: dict[int, float] = defaultdict(float)
    for need, server in needs[:keep]:
        per_server[server] += need
    return math.ceil(max(per_server.values(), default=0.0))


def lastmod_honesty(*, announced: int, confirmed: int, found: int, foretold: int) -> float | None:
    """A server's lastmod honesty, 0–1: (confirmed / announced) · (foretold / found). `announced`: lastmod
    changes seen in its sitemaps; `confirmed`: those a check then found a real change for; `found`: real
    changes the checks found; `foretold`: those lastmod had announced. None while there is no evidence
    either way (no announcement and no change found)."""
    if announced <= 0 and found <= 0:
        return None
    precision = confirmed / announced if announced > 0 else 0.0
    recall = foretold / found if found > 0 else 1.0
    return max(0.0, min(1.0, precision)) * max(0.0, min(1.0, recall))


def lastmod_trusted(score: float | None, threshold: float = HONESTY_THRESHOLD) -> bool:
    """Whether a server's lastmod may make its pages due: no evidence yet is trust (the sitemap standard's
    default), a score below the threshold is not."""
    return score is None or score >= threshold


def hours_met_pct(hours: Iterable[bool]) -> float | None:
    """The share of recorded hours in which the target held, in per cent; None without any hour."""
    flags = list(hours)
    if not flags:
        return None
    return 100.0 * sum(1 for f in flags if f) / len(flags)


# Budget and burn, as for uptime: the objective's hours should hold the target HOURS_OBJECTIVE of the time
# over 30 days; the rest is its error budget. Burn rate over a window = the share of its hours missed over
# the share allowed; two windows (fast and slow, SRE practice) raise the alert when either burns faster than
# its threshold, and it is restored when neither does.
HOURS_OBJECTIVE = 0.95
FAST_HOURS, FAST_BURN = 6, 6.0  # 2 of the last 6 hours missed
SLOW_HOURS, SLOW_BURN = 72, 2.0  # 8 of the last 72 hours missed


def burn_rate(recent: Sequence[bool], hours: int, objective: float = HOURS_OBJECTIVE) -> float:
    """The burn rate over the `hours` newest of `recent` (met flags, newest first); 0 with no hour."""
    window = list(recent[:hours])
    if not window:
        return 0.0
    missed = sum(1 for met in window if not met) / len(window)
    return missed / (1.0 - objective)


def burning(recent: Sequence[bool]) -> bool:
    """Whether the objective burns its error budget too fast in the fast or the slow window."""
    return burn_rate(recent, FAST_HOURS) >= FAST_BURN or burn_rate(recent, SLOW_HOURS) >= SLOW_BURN


def budget_left_pct(hours: Sequence[bool], objective: float = HOURS_OBJECTIVE) -> float | None:
    """The error budget left over the recorded hours (per cent; negative when overspent); None with no hour."""
    if not hours:
        return None
    allowed = (1.0 - objective) * len(hours)
    missed = sum(1 for met in hours if not met)
    return 100.0 * (1.0 - missed / allowed)
