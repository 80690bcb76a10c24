"""The status-check table over time: partitions made ahead (beat), and retention.

On PostgreSQL `crawladmin_statuscheck` is partitioned by `checked_at` (migration 0013, crawlcore.db.partitions):
beat keeps CHECK_PARTITIONS_AHEAD days of partitions ready, and moves any row that fell into the DEFAULT
partition (a check stamped in a span with no partition yet: a clock far ahead, beat stopped for a week)
into a partition of its own. Retention drops partitions whose whole span is older than the cutoff. On
SQLite the table is plain and old rows are deleted in bounded chunks.

Retention covers every agent's checks: the table is one time series. What the crawl needs to keep about a
URL is on the URL row and in its UrlEvent rows (last status, last check, every move with its status and
latency), and the monitor's history lives on in the hourly rollups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from crawlcore.db import partitions
from crawlcore.models import StatusCheck

TABLE = StatusCheck._meta.db_table
COLUMN = "checked_at"
DELETE_CHUNK = 5000
DELETE_MAX_CHUNKS = 200  # a plain table loses at most 1,000,000 rows a run; the next run goes on


@dataclass
class ChecksPruned:
    rows: int = 0
    partitions: list[str] = field(default_factory=list)


def check_partitions_ensure(*, now: datetime | None = None) -> list[str]:
    """Make the partitions from yesterday to CHECK_PARTITIONS_AHEAD days ahead that do not exist yet, and
    those the DEFAULT partition holds rows of within the retention window. Returns their names ([] on a
    plain table)."""
    now = now or timezone.now()
    cutoff = retention_cutoff(now=now)
    return partitions.ensure(
        TABLE,
        column=COLUMN,
        start=max(now - timedelta(days=1), cutoff),
        end=now + timedelta(days=settings.CHECK_PARTITIONS_AHEAD),
        span_days=settings.CHECK_PARTITION_DAYS,
        adopt_from=cutoff,
    )


def retention_cutoff(*, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(days=settings.CHECK_RETENTION_DAYS)


def checks_prune(*, before: datetime) -> ChecksPruned:
    """Remove the status checks made before `before`. Partitioned: drop the partitions that end at or before
    it (and old rows of the DEFAULT partition); the partition that straddles it waits, whole, for its end.
    Plain table: delete the rows, in chunks."""
    if partitions.is_partitioned(TABLE):
        dropped = partitions.drop_before(TABLE, column=COLUMN, cutoff=before)
        return ChecksPruned(rows=dropped.rows, partitions=dropped.partitions)
    out = ChecksPruned()
    old = StatusCheck.objects.filter(checked_at__lt=before)
    for _ in range(DELETE_MAX_CHUNKS):
        ids = list(old.values_list("id", flat=True)[:DELETE_CHUNK])
        if not ids:
            break
        out.rows += StatusCheck.objects.filter(id__in=ids).delete()[0]
    return out
