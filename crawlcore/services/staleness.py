"""The active scan's choice of Visited URLs (seed 004), made in the database.

Each sweep is one period t: every eligible URL is scored by (T − t)·s_j(t) − p_j·g_i(t)
(scheduling.staleness.score) and the top m go to the active-scan workers, m being
CRAWL_ACTIVE_SCAN_CAPACITY. Here:

* s_j: whole periods of CRAWL_STALENESS_PERIOD seconds since the URL was last checked (fetched, or
  confirmed unchanged) — `last_checked_at`;
* p_j: the page's size in KB — the stored body's size, else the Content-Length last seen, else 16 KB;
* g_i(t): the server's mean response time in this hour of day, in seconds, from its 24-hour load profile
  (monitoring); a server without one for this hour counts as the median of the servers that have one;
* T − t: CRAWL_STALENESS_HORIZON periods. The crawler's horizon rolls forward with time, so what is left
  of it is always the same: the paper's finite horizon only matters at its end.

The query never loads the URLs into Python. It first scores the 4m oldest eligible URLs (an index walk):
the m-th best of them, θ, is a lower bound of the m-th best overall, and since a score is at most
(T − t)·s_j, no URL younger than floor(θ / (T − t)) periods can reach it. The second query scores only
URLs at least that old and returns the best m, ordered as scheduling.staleness.top_m orders them (score,
then id). How much the bound saves depends on how spread the ages are: over 1,000,000 URLs checked
across 30 days it scores a few thousand; when all were checked within the same few periods it scores
them all (bench/staleness_selection.py shows both).
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, FloatField, QuerySet, Value
from django.db.models.functions import Coalesce, Floor
from django.utils import timezone

from crawlcore.db.functions import AgeSeconds, JsonArrayFloat
from crawlcore.selectors import load_profiles
from scheduling.staleness import prune_age

DEFAULT_KB = 16.0  # a page whose size was never seen: a typical HTML page
DEFAULT_RESPONSE_S = 1.0  # no server has a profile for this hour
SAMPLE = 4  # the bound comes from the best m of the 4m oldest: one large page among them cannot spoil it


def default_response_s(*, hour: int) -> float:
    """The response time assumed for servers without a profile for `hour`: the profiled servers' median."""
    values = [p[hour] for p in load_profiles().values() if isinstance(p, list) and len(p) == 24 and p[hour] is not None]
    return statistics.median(values) / 1000.0 if values else DEFAULT_RESPONSE_S


def staleness_scored(qs: QuerySet, *, now: datetime) -> QuerySet:
    """`qs` (Url rows) annotated with `staleness_score`, the seed 004 score of this period."""
    period = settings.CRAWL_STALENESS_PERIOD
    remaining = settings.CRAWL_STALENESS_HORIZON
    hour = timezone.localtime(now).hour
    size_kb = Coalesce(F("page__size"), F("content_length"), Value(DEFAULT_KB * 1024.0), output_field=FloatField())
    response_s = Coalesce(
        JsonArrayFloat("server__load_profile", hour) / Value(1000.0),
        Value(default_response_s(hour=hour)),
        output_field=FloatField(),
    )
    staleness = Floor(AgeSeconds(now, "last_checked_at") / Value(float(period)))
    score = Value(float(remaining)) * staleness - size_kb / Value(1024.0) * response_s
    return qs.annotate(staleness_score=score)


def staleness_top(qs: QuerySet, *, now: datetime, limit: int) -> list[int]:
    """Ids of the `limit` URLs of `qs` with the highest seed 004 score, best first (ties: smaller id)."""
    if limit <= 0:
        return []
    scored = staleness_scored(qs, now=now)
    sample = scored.order_by("last_checked_at", "id").values_list("staleness_score", flat=True)[: SAMPLE * limit]
    scores = sorted(sample, reverse=True)
    if len(scores) >= limit:
        least = prune_age(scores[limit - 1], remaining=settings.CRAWL_STALENESS_HORIZON)
        if least:
            scored = scored.filter(
                last_checked_at__lte=now - timedelta(seconds=least * settings.CRAWL_STALENESS_PERIOD)
            )
    return list(scored.order_by(F("staleness_score").desc(), "id").values_list("id", flat=True)[:limit])
