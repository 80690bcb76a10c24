"""Freshness objectives: how stale a page's stored copy is, the percentiles over an objective's
pages, whether its target holds, and the requests a day it would take to hold it.

Staleness of a page is the time since its stored copy stopped being current (the benchmark's *age*). We
never see that moment; we know when the copy was last found current (`since_current`: the last check that
fetched it or confirmed it unchanged) and the page's change rate λ (seed 004's estimator, Cho &
Garcia-Molina 2003, the one crawlcore.services.recrawl_choice computes in SQL). With changes at rate λ
(Poisson), a copy found current τ ago is stale by, on average,

    a(τ) = τ − (1 − e^(−λτ)) / λ

(0 right after the check, τ − 1/λ long after it). But the objective is a percentile of the staleness itself,
not of its mean: a page checked τ ago is fresh with probability e^(−λτ), and stale by more than s (s < τ)
with probability 1 − e^(−λ(τ − s)) (its first change came more than s before now). The quantiles of the
mixture of the pages' distributions (`staleness_quantile`) are those of a page drawn at random: the share of
pages stale by more than its p95 is 5 % on average. (The percentile of the pages' means would be far lower:
most of a page's mean is made of the chance it is fresh.) The objective's p50/p95 are those of its pages
themselves, what one reading of all of them finds on average (`pages_quantiles`): the q-th percentile of n
values interpolates between two of their order statistics, each computed from every page's chance. With many
pages the two are one; with 16 pages of which a fifth to a third are stale, the mixture's p95 is a quarter to
two fifths above what the pages show.

The budget a target needs: a page may wait until the chance it is stale by more than the target reaches half
the 5 % the p95 allows, τ = T − L − ln(0.975)/λ (`interval_for`; half, so the p95 stays below the target
between two sweeps). L is the server's reload lag: a check that finds a change does not make the copy current,
the reload after it does, and until then the page stays stale (the scan batch's other pages, the load
dispatch, the politeness turn; seconds to tens of seconds), and before the check the page waits for the next
sweep. L is the sweep's period plus what the crawl itself shows: the p95 of the time from a check that found a
change to its reload, over the server's recent reloads. Checked that often, no
page passes the target more than 5 % of the time, so neither does their mixture. A check is a HEAD and,
when it finds a change (probability 1 − e^(−λI)), a reload; summed per server, the largest sum is the budget
needed per server and day.

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
SHORTEST_INTERVAL = 1.0  # a target shorter than the reload lag: checked as often as a sweep can, not more
HONESTY_THRESHOLD = 0.5  # below it, a server's lastmod no longer makes its pages due
# The schedule aims at half the share a p95 target allows (2.5 %): a page checked exactly when its chance of
# passing the target reached 5 % would leave the objective's p95 at the target itself between two sweeps.
SCHEDULE_QUANTILE = 97.5
# The objective's percentiles over its own pages (pages_quantiles): exact up to this many pages, integrated over
# this many points; beyond, the mixture's quantile, within ~1 % of it there.
EXACT_PAGES = 400
QUANTILE_GRID = 256
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


def interval_for(rate: float, target: float, quantile: float = SCHEDULE_QUANTILE, lag: float = 0.0) -> float:
    """The longest check interval I (seconds, from SHORTEST_INTERVAL to LONGEST_INTERVAL) at which the chance
    the page is stale by more than `target` when its reload comes, `lag` seconds after the check, stays within
    1 − quantile/100: I = target − lag − ln(quantile/100)/λ."""
    if target <= 0:
        return 0.0
    if rate <= 0:
        return LONGEST_INTERVAL
    interval = target - max(0.0, lag) - math.log(quantile / 100.0) / rate
    return min(LONGEST_INTERVAL, max(SHORTEST_INTERVAL, interval))


def staleness_at_detection(rate: float, interval: float) -> float:
    """How stale, on average, a copy is when a check finds it changed, `interval` seconds after it was last
    found current: interval − E[first change | it came within the interval] (Poisson changes at `rate`),
    = interval − 1/λ + interval·e^(−λI)/(1 − e^(−λI)); interval/2 when changes are rare within it."""
    interval = max(0.0, interval)
    x = max(rate, 0.0) * interval
    if x < 1e-6:
        return interval / 2
    return interval - 1.0 / rate + interval * math.exp(-x) / -math.expm1(-x)


def stale_beyond(rate: float, since_current: float, s: float) -> float:
    """P(staleness > s) of a page with change rate `rate` found current `since_current` seconds ago."""
    if rate <= 0 or s >= since_current:
        return 0.0
    return 1.0 - math.exp(-rate * (since_current - max(0.0, s)))


def changed_beyond(rate: float, interval: float, s: float) -> float:
    """P(a copy was stale by more than `s` when a check found it changed), its change having come in the
    `interval` seconds before that check (Poisson changes at `rate`: the first change's time within the
    interval is exponential, truncated to it)."""
    if s < 0:
        return 1.0
    if s >= interval:
        return 0.0
    x, whole = max(rate, 0.0) * (interval - s), max(rate, 0.0) * interval
    if whole < 1e-6:
        return (interval - s) / interval
    return math.expm1(-x) / math.expm1(-whole)


def _beyond(p: PageState, s: float) -> float:
    """P(page p is stale by more than s now)."""
    if p.known_stale is not None:
        if p.changed_within > 0:
            return changed_beyond(p.rate, p.changed_within, s - p.since_current)
        return 1.0 if s < p.known_stale else 0.0
    return stale_beyond(p.rate, p.since_current, s)


def staleness_quantile(pages: Sequence[PageState], q: float) -> float | None:
    """The q-th percentile (0–100) of the staleness of a page drawn from `pages` (the mixture of their
    distributions); None when no page has been found current. Bisection on s: the share of pages stale by
    more than s falls from P(stale) at 0 to 0 at the oldest check."""
    measured = [p for p in pages if p.since_current is not None]
    if not measured:
        return None
    beyond = 1.0 - min(100.0, max(0.0, q)) / 100.0

    def share(s: float) -> float:
        return sum(_beyond(p, s) for p in measured) / len(measured)

    if share(0.0) <= beyond:
        return 0.0
    low, high = 0.0, max(max(p.since_current + p.changed_within, p.known_stale or 0.0) for p in measured)
    for _ in range(50):
        mid = (low + high) / 2
        if share(mid) > beyond:
            low = mid
        else:
            high = mid
    return high


def pages_quantiles(pages: Sequence[PageState], qs: Sequence[float]) -> list[float | None]:
    """The qs-th percentiles (0–100) of the staleness of `pages` themselves, as a reading of all of them finds
    them on average (percentile's interpolation between two of their order statistics). Exact up to EXACT_PAGES
    measured pages: the j-th smallest staleness exceeds s when at least n − j pages do, a count whose
    distribution follows from each page's chance (independent pages), built once for every q and integrated
    over s. Beyond that, the mixture's quantile (staleness_quantile), which it approaches as n grows. None when
    no page has been found current."""
    measured = [p for p in pages if p.since_current is not None]
    n = len(measured)
    if n == 0:
        return [None for _ in qs]
    if n > EXACT_PAGES:
        return [staleness_quantile(measured, q) for q in qs]
    top = max(max(p.since_current + p.changed_within, p.known_stale or 0.0) for p in measured)
    if top <= 0:
        return [0.0 for _ in qs]
    import numpy as np  # here, not at the top: the workers that never read an objective do not load it

    grid = np.linspace(0.0, top, QUANTILE_GRID)
    counts = np.zeros((n + 1, grid.size))  # counts[k, g]: P(exactly k pages are stale by more than grid[g])
    counts[0] = 1.0
    for p in measured:
        beyond = np.array([_beyond(p, s) for s in grid])
        shifted = counts[:-1] * beyond
        counts *= 1.0 - beyond
        counts[1:] += shifted

    def order_statistic(j: int) -> float:  # E[the (j+1)-th smallest] = ∫ P(at least n − j pages beyond s) ds
        return float(np.trapezoid(counts[n - j :].sum(axis=0), grid))

    out = []
    for q in qs:
        pos = (n - 1) * min(100.0, max(0.0, q)) / 100.0
        j = math.floor(pos)
        low = order_statistic(j)
        out.append(low if pos == j else low + (pos - j) * (order_statistic(j + 1) - low))
    return out


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
    # Known stale (a check found it changed and its reload is still to come): by this much on average, by
    # `since_current` (the seconds since that check) at least; its change came in the `changed_within`
    # seconds before the check (0: not known, and its staleness is taken to be `known_stale`).
    known_stale: float | None = None
    changed_within: float = 0.0
    lag: float = 0.0  # seconds from when its check is due to the reload that makes it current (the sweep, the reload)


def staleness_of(pages: Iterable[PageState]) -> list[float]:
    """Each measured page's expected staleness (its known staleness when a check found it changed)."""
    return [p.known_stale if p.known_stale is not None else expected_staleness(p.rate, p.since_current)
            for p in pages if p.since_current is not None]  # fmt: skip


def target_met(p95: float | None, target: float) -> bool:
    """The target holds when the p95 staleness is at most the target (no page measured: it holds)."""
    return p95 is None or p95 <= target


def budget_needed(pages: Sequence[PageState], target: float, *, quantile: float = SCHEDULE_QUANTILE) -> int:
    """Requests per server and day that would hold `target` at the given quantile: each page checked at
    interval_for(its rate, its server's reload lag), summed per server, the largest sum (rounded up). 0 when
    there are no pages."""
    per_server: dict[int, float] = defaultdict(float)
    for p in pages:
        per_server[p.server] += requests_per_day(p.rate, interval_for(p.rate, target, quantile, p.lag))
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
