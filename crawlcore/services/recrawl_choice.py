"""The active scan's choice of Visited URLs (seed 004), made in the database.

Each active sweep is one period t of CRAWL_STALENESS_PERIOD seconds. Every Visited URL older than the
floor CRAWL_REVISIT_AFTER is a candidate, scored by (T − t)·s_j(t) − p_j·g_i(t)
(scheduling.staleness_score.score), and the best m go to the active-scan workers:

* s_j(t): whole periods since the URL was last checked (fetched, or confirmed unchanged) — `last_checked_at`;
* T − t: the periods left in the current recrawl cycle. The cycle, CRAWL_RECRAWL_CYCLE seconds (a day),
  is the paper's horizon of T periods; cycles start at multiples of their length since the epoch, so
  every sweep in the cluster agrees on t. Early in a cycle staleness weighs T times a period's cost, at
  its end once: the paper's eq. 9;
* p_j·g_i(t): the seconds a worker spends fetching the page — its size in bytes (the stored body, else
  the Content-Length last seen, else 16 KB) over the server's observed throughput in this hour of day
  (bytes over seconds of its GETs in that hour over the last CRAWL_THROUGHPUT_DAYS days; a server not
  seen in this hour: its mean over the hours seen, else the median of the servers seen, else 100 KB/s);
* m: the measured capacity of the active-scan workers per period (`active_scan_room`), at most
  CRAWL_ACTIVE_SCAN_CAPACITY.

Units: s in periods, the cost in seconds, as the paper mixes them; a second of a worker's time is worth
one period of staleness at the end of the cycle and 1/T of one at its start.

A change signal fits the framework through s_j, not beside it. The derivation (eq. 1–9) only needs s_j
to be 0 after a fetch and to grow by at most one per period without one: it is the staleness of the
stored copy, and "periods since the last fetch" is the paper's stand-in for it, exact only when every
page changes every period. With a change signal we use the expected staleness instead:

* the changes the active scan has found on the page (its Last-Modified, ETag or length differed) give
  its change rate λ_j, and s_j(t) = τ − (1 − e^(−λ_j·τ))/λ_j in periods, τ the time since the last
  check (`_expected_stale_periods`): a page seen to change often counts nearly every period since the
  check, one never seen to change counts slowly;
* a change known for certain — a recheck whose validators differ, or (from the sitemap issue) a
  `lastmod` later than our fetch — sends the URL back to Init and the load agent fetches it at once: its
  staleness is certain, no score is needed; a `lastmod` is also a change to count in λ_j.

Last-Modified alone (the age of the version we hold) is not used for λ_j: on pages that change on a
schedule it predicts the wrong way (a version seen just after it began has the longest to live), and
the benchmark measured it worse than the plain s. CRAWL_RECRAWL_POLICY=staleness-plain scores with the
paper's s (whole periods since the last check).

For comparison (bench/staleness_live.py) the sweep can also rank by the paper's two baselines and by
round robin: change-frequency (Tan et al. 2010: λ_j·s_j, λ_j by the same estimator as ours,
`_change_rate`, so the two differ only in how they use it), importance (Khan et al. 2013: w_j·s_j, w_j
one plus the links to the URL) and plain oldest first, ignoring cost.

The staleness query never loads the URLs into Python. It first scores the 4m oldest candidates (an
index walk): the m-th best of them, θ, is a lower bound of the m-th best overall, and since a score is
at most (T − t)·s_j, no URL younger than floor(θ / (T − t)) periods can reach it. The second query scores
only URLs at least that old and returns the best m, ordered as scheduling.staleness_score.top_m orders them
(score, then id) (bench/staleness_selection.py).
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Case, Count, F, FloatField, Min, OuterRef, Q, QuerySet, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Exp, ExtractHour, Floor, Greatest, Ln
from django.utils import timezone

from crawlcore.db.functions import AgeSeconds
from crawlcore.models import Link, StatusCheck, Url, UrlEvent
from crawler.lifecycle import Agent, State
from scheduling.staleness_score import prune_age

RECRAWL_POLICIES = ("staleness", "staleness-plain", "round-robin", "change-frequency", "importance")
DEFAULT_BYTES = 16 * 1024  # a page whose size was never seen: a typical HTML page
DEFAULT_THROUGHPUT = 100_000.0  # bytes per second, when no server has been seen in this hour
SAMPLE = 4  # the bound comes from the best m of the 4m oldest: one large page among them cannot spoil it


def horizon_remaining(*, now: datetime) -> int:
    """T − t: the periods left in the current recrawl cycle, T − t ≥ 1."""
    period, cycle = settings.CRAWL_STALENESS_PERIOD, settings.CRAWL_RECRAWL_CYCLE
    total = max(1, round(cycle / period))
    t = int((now.timestamp() % cycle) // period)
    return max(1, total - t)


def servers_throughput(*, now: datetime) -> tuple[dict[int, float], float]:
    """Each server's observed throughput (bytes per second of its GETs) in `now`'s hour of day, and the
    value for a server never seen in that hour (see the module docstring)."""
    hour = timezone.localtime(now).hour
    since = now - timedelta(days=settings.CRAWL_THROUGHPUT_DAYS)
    checks = (
        StatusCheck.objects.filter(checked_at__gte=since, checked_at__lt=now, method="GET", bytes__gt=0)
        .filter(latency_ms__gt=0)
        .exclude(category__in=StatusCheck.NOT_SERVER_ANSWERS)
        .annotate(hour=ExtractHour("checked_at"))
    )
    per_hour: dict[int, dict[int, float]] = {}
    totals = checks.values("server_id", "hour").annotate(b=Sum("bytes"), ms=Sum("latency_ms"))
    for row in totals:
        per_hour.setdefault(row["server_id"], {})[row["hour"]] = row["b"] * 1000.0 / row["ms"]
    now_rates = [hours[hour] for hours in per_hour.values() if hour in hours]
    default = statistics.median(now_rates) if now_rates else DEFAULT_THROUGHPUT
    out = {}
    for server_id, hours in per_hour.items():
        out[server_id] = hours[hour] if hour in hours else statistics.mean(hours.values())
    return out, default


def _cost_seconds(*, now: datetime):
    """p_j·g_i(t): the page's bytes over its server's throughput in this hour."""
    rates, default = servers_throughput(now=now)
    throughput = Case(
        *[When(server_id=sid, then=Value(rate)) for sid, rate in rates.items()],
        default=Value(default),
        output_field=FloatField(),
    )
    size = Coalesce(F("page__size"), F("content_length"), Value(float(DEFAULT_BYTES)), output_field=FloatField())
    return size / throughput


def _periods(now: datetime):
    """The paper's s_j(t): whole periods since the last check."""
    return Floor(AgeSeconds(now, "last_checked_at") / Value(float(settings.CRAWL_STALENESS_PERIOD)))


def _change_rate(now: datetime):
    """λ_j, changes per second: Cho & Garcia-Molina's estimator (2003) from the URL's check history.

    n active-scan checks at a mean interval I, X of which found a change: λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I.
    Unlike X/(n·I) it counts the changes a check cannot see (several between two checks): a page found
    changed at every check gets a rate that grows with the evidence, not one stuck at 1/I. I is the time
    from the URL's first load to its last check (W), over n. The prior, one change a recrawl cycle,
    weighs as one check: λ = (n·λ̂ + 1/cycle)/(n + 1) = (−ln(…)·n²/W + 1/cycle)/(n + 1); a URL never
    checked has the prior. Two subqueries per URL over event_url_time_idx: −ln(…)·n² and n."""
    checks = (
        UrlEvent.objects.filter(url=OuterRef("pk"), agent=Agent.ACTIVE_SCAN.value, from_state=State.VISITED.value)
        .filter(to_state__in=[State.VISITED.value, State.INIT.value])
        .values("url")
        .annotate(n=Count("id", output_field=FloatField()), x=Count("id", filter=Q(to_state=State.INIT.value)))
    )
    n, x = F("n"), F("x")
    evidence = checks.annotate(e=-Ln((n - x + Value(0.5)) / (n + Value(0.5))) * n * n).values("e")
    count = Coalesce(Subquery(checks.values("n")), Value(0.0), output_field=FloatField())
    evidence = Coalesce(Subquery(evidence), Value(0.0), output_field=FloatField())
    prior = Value(1.0 / settings.CRAWL_RECRAWL_CYCLE)
    return (evidence / Greatest(_watched(now), Value(1.0)) + prior) / (count + Value(1.0))


def _watched(now: datetime):
    """Seconds from the URL's first load to its last check: the time its n checks cover (reads the
    `first_loaded_at` annotation of `staleness_scored`). Not from its first sighting: a URL can wait long
    in Init before its first load, and that wait is no interval between checks."""
    return AgeSeconds(now, "first_loaded_at") - AgeSeconds(now, "last_checked_at")


def _first_loaded():
    """When the load agent first moved the URL to Visited (else when it was first seen)."""
    first = (
        UrlEvent.objects.filter(url=OuterRef("pk"), agent=Agent.LOAD.value, to_state=State.VISITED.value)
        .values("url")
        .annotate(first=Min("at"))
        .values("first")
    )
    return Coalesce(Subquery(first), F("created_at"))


def _expected_stale_periods(now: datetime, *, rate, horizon: float):
    """s_j(t) from the change signal: the staleness a check now removes, per period of what is left of the
    cycle, in periods (see the module docstring for the derivation).

    With changes at rate λ (Poisson), a copy last checked τ ago is stale by τ − (1 − e^(−λτ))/λ on average; a
    fetch now instead of never in the H seconds left takes away, integrated over them,
    B = H·τ − (1 − e^(−λτ))·(1 − e^(−λH)) / λ². s_j = B / H: 0 right after a check, never more than the
    periods since it (so the pruning bound holds), and nearly all of them for a page that changes often."""
    tau = AgeSeconds(now, "last_checked_at")
    h = Value(float(horizon))
    removed = tau - (Value(1.0) - Exp(-rate * tau)) * (Value(1.0) - Exp(-rate * h)) / (rate * rate * h)
    return Greatest(removed, Value(0.0)) / Value(float(settings.CRAWL_STALENESS_PERIOD))


def staleness_scored(qs: QuerySet, *, now: datetime, signal: bool = True) -> QuerySet:
    """`qs` (Url rows) annotated with `staleness_score`, the seed 004 score of this period; `signal`: s_j is
    the expected staleness a check removes given the change rate and the cost the expected seconds of the
    reload (the default), else the paper's plain s (periods since the last check) and cost p_j·g_i(t)."""
    remaining = float(horizon_remaining(now=now))
    if not signal:
        return qs.annotate(staleness_score=Value(remaining) * _periods(now) - _cost_seconds(now=now))
    qs = qs.annotate(first_loaded_at=_first_loaded())
    rate = _change_rate(now)
    horizon = remaining * settings.CRAWL_STALENESS_PERIOD
    periods = _expected_stale_periods(now, rate=rate, horizon=horizon)
    # The reload happens only when the check finds a change, with probability 1 − e^(−λτ).
    changed = Value(1.0) - Exp(-rate * AgeSeconds(now, "last_checked_at"))
    return qs.annotate(staleness_score=Value(remaining) * periods - changed * _cost_seconds(now=now))


def baseline_scored(qs: QuerySet, *, now: datetime, policy: str) -> QuerySet:
    """`qs` annotated with `staleness_score` by one of the comparison policies (none of them looks at cost)."""
    period = float(settings.CRAWL_STALENESS_PERIOD)
    if policy == "round-robin":  # oldest check first, to the second
        return qs.annotate(staleness_score=AgeSeconds(now, "last_checked_at") / Value(period))
    if policy == "change-frequency":  # λ_j by the same estimator as ours, so only the use of it differs
        qs = qs.annotate(first_loaded_at=_first_loaded())
        return qs.annotate(staleness_score=_change_rate(now) * _periods(now))
    if policy == "importance":
        links = Link.objects.filter(to_url=OuterRef("pk")).values("to_url").annotate(n=Count("id")).values("n")
        weight = Coalesce(Subquery(links), Value(0), output_field=FloatField()) + Value(1.0)
        return qs.annotate(staleness_score=weight * _periods(now))
    raise ValueError(f"unknown recrawl policy {policy!r}: expected one of {', '.join(RECRAWL_POLICIES)}")


def staleness_top(qs: QuerySet, *, now: datetime, limit: int, policy: str = "staleness") -> list[int]:
    """Ids of the `limit` URLs of `qs` with the highest score, best first (ties: smaller id)."""
    if limit <= 0:
        return []
    if policy not in ("staleness", "staleness-plain"):
        scored = baseline_scored(qs, now=now, policy=policy)
        return list(scored.order_by(F("staleness_score").desc(), "id").values_list("id", flat=True)[:limit])
    remaining = horizon_remaining(now=now)
    # Pruning stays exact with the signal: the expected staleness is never more than the time since the
    # last check, so (T − t)·(periods since the last check) still bounds the score.
    scored = staleness_scored(qs, now=now, signal=policy == "staleness")
    sample = scored.order_by("last_checked_at", "id").values_list("staleness_score", flat=True)[: SAMPLE * limit]
    scores = sorted(sample, reverse=True)
    if len(scores) >= limit:
        least = prune_age(scores[limit - 1], remaining=remaining)
        if least:
            scored = scored.filter(
                last_checked_at__lte=now - timedelta(seconds=least * settings.CRAWL_STALENESS_PERIOD)
            )
    return list(scored.order_by(F("staleness_score").desc(), "id").values_list("id", flat=True)[:limit])


def active_scan_outstanding(*, now: datetime) -> int:
    """Visited URLs still out with the active scan (leased, the lease not expired)."""
    visited = Url.objects.filter(state=State.VISITED.value)
    return visited.exclude(lease_owner="").filter(lease_expires_at__gte=now).count()


def active_scan_room(*, now: datetime) -> int:
    """m for this period, less what is still out: how many URLs to send the active-scan workers now.

    Measured, not configured: the URLs confirmed in the last period (Visited, checked within it) are what
    the workers managed while work was waiting (URLs still leased: they were saturated), so m is that
    many. When nothing was left over they had room: m doubles, from CRAWL_ACTIVE_SCAN_CAPACITY (also the
    cap) before anything was measured. The count includes pages the load agent fetched in the period,
    which errs on the generous side; what is still out is subtracted, so the queue never grows past one
    period's work for long.
    """
    cap = settings.CRAWL_ACTIVE_SCAN_CAPACITY
    visited = Url.objects.filter(state=State.VISITED.value)
    outstanding = active_scan_outstanding(now=now)
    since = now - timedelta(seconds=settings.CRAWL_STALENESS_PERIOD)
    done = visited.filter(last_checked_at__gte=since, last_checked_at__lte=now).count()
    if outstanding:
        m = max(1, done)
    else:
        m = cap if done == 0 else 2 * done
    return max(0, min(cap, m) - outstanding)
