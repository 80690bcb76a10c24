"""How long to wait before the next request to a server (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

MAX_BACKOFF_SECONDS = 86400.0
DEFAULT_BACKOFF_SECONDS = 60.0


def crawl_delay(robots_delay: float | None, *, default: float, cap: float) -> float:
    """robots.txt Crawl-delay capped at `cap` (a site cannot stall us for hours), else the default."""
    if robots_delay is None or robots_delay < 0:
        return default
    return min(robots_delay, cap)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float:
    """Seconds asked for by a Retry-After header (delta-seconds or HTTP-date), bounded to a day.

    A missing or unreadable value gets a modest default rather than an immediate retry.
    """
    if not value:
        return DEFAULT_BACKOFF_SECONDS
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_BACKOFF_SECONDS)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return DEFAULT_BACKOFF_SECONDS
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, min((when - now).total_seconds(), MAX_BACKOFF_SECONDS))
