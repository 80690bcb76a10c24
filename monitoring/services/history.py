"""Load history upkeep (beat): hourly rollups of the monitor's checks, retention, 24-hour load profiles."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from crawlcore.services.check_history import checks_prune, retention_cutoff
from crawler.lifecycle import Agent
from crawler.windows import in_dated_windows

from ..check_stats import COUNT_FIELDS, CheckSample, summarize
from ..load_profile import load_profile
from ..models import HourlyRollup
from ..selectors import hour_floor, maintenance_windows
from .evidence import evidence_prune

_ROLLUP_FIELDS = [
    *COUNT_FIELDS,
    "timed",
    "latency_min_ms",
    "latency_mean_ms",
    "latency_p95_ms",
    "latency_max_ms",
    "updated_at",
]
PRUNE_CHUNK = 5000
PRUNE_MAX_CHUNKS = 200  # one run deletes at most 1,000,000 rows; the next run goes on


def rollups_build(*, since: datetime | None = None, now: datetime | None = None) -> int:
    """(Re)compute the hourly rollups of every hour from `since` (default: the previous hour) up to and
    including the current, partial one. Idempotent: an upsert on (server, hour), so a rerun, or a
    maintenance window entered after the fact, just rewrites the figures. Returns rollups written."""
    now = now or timezone.now()
    start = hour_floor(since or now - timedelta(hours=1))
    end = hour_floor(now) + timedelta(hours=1)
    buckets: dict[tuple[int, datetime], list] = defaultdict(list)
    checks = StatusCheck.objects.filter(agent=Agent.MONITOR.value, checked_at__gte=start, checked_at__lt=end)
    for row in checks.values_list("server_id", "checked_at", "category", "status_code", "latency_ms").iterator(
        chunk_size=5000
    ):
        buckets[(row[0], hour_floor(row[1]))].append(row)
    windows = maintenance_windows(server_ids={sid for sid, _ in buckets}, start=start, end=end)
    rollups = []
    for (server_id, hour), rows in buckets.items():
        own = windows.get(server_id, ())
        counts, lat = summarize(
            CheckSample(cat, status, ms, in_dated_windows(own, at)) for _, at, cat, status, ms in rows
        )
        rollups.append(
            HourlyRollup(
                server_id=server_id,
                hour=hour,
                normal=counts.normal,
                delay=counts.delay,
                disconnect=counts.disconnect,
                error=counts.error,
                maintenance=counts.maintenance,
                timed=lat.count if lat else 0,
                latency_min_ms=lat.min_ms if lat else None,
                latency_mean_ms=lat.mean_ms if lat else None,
                latency_p95_ms=lat.p95_ms if lat else None,
                latency_max_ms=lat.max_ms if lat else None,
                updated_at=now,
            )
        )
    HourlyRollup.objects.bulk_create(
        rollups, batch_size=500, update_conflicts=True, unique_fields=["server", "hour"], update_fields=_ROLLUP_FIELDS
    )
    return len(rollups)


@dataclass
class Pruned:
    checks: int = 0
    rollups: int = 0
    partitions: int = 0  # status-check partitions dropped (PostgreSQL)
    evidence: int = 0  # incidents' evidence past EVIDENCE_RETENTION_DAYS


def _delete_in_chunks(qs) -> int:
    deleted = 0
    for _ in range(PRUNE_MAX_CHUNKS):
        ids = list(qs.values_list("id", flat=True)[:PRUNE_CHUNK])
        if not ids:
            break
        deleted += qs.model.objects.filter(id__in=ids).delete()[0]
    return deleted


def history_prune(*, now: datetime | None = None) -> Pruned:
    """Drop status checks older than CHECK_RETENTION_DAYS (every agent's: whole partitions on PostgreSQL,
    crawlcore.services.check_history), rollups older than MONITOR_ROLLUP_RETENTION_DAYS and evidence older
    than EVIDENCE_RETENTION_DAYS. The rollups of
    an hour are long built when its raw checks go."""
    now = now or timezone.now()
    rollup_cutoff = now - timedelta(days=settings.MONITOR_ROLLUP_RETENTION_DAYS)
    checks = checks_prune(before=retention_cutoff(now=now))
    out = Pruned(checks=checks.rows, partitions=len(checks.partitions))
    out.rollups = _delete_in_chunks(HourlyRollup.objects.filter(hour__lt=hour_floor(rollup_cutoff)))
    out.evidence = evidence_prune(now=now)
    return out


def load_profiles_build(*, now: datetime | None = None, days: int | None = None) -> int:
    """Store each monitored server's 24-hour load profile for the scheduler. Returns servers updated."""
    now = now or timezone.now()
    days = days or settings.MONITOR_PROFILE_DAYS
    rows: dict[int, list] = defaultdict(list)
    since = hour_floor(now) - timedelta(days=days)
    qs = HourlyRollup.objects.filter(hour__gte=since, timed__gt=0)
    for server_id, hour, timed, mean in qs.values_list("server_id", "hour", "timed", "latency_mean_ms").iterator(
        chunk_size=5000
    ):
        rows[server_id].append((timezone.localtime(hour).hour, timed, mean))
    # Written down onto the crawl core's server rows: the schedulers read them there, without knowing monitoring.
    servers = list(Server.objects.filter(id__in=list(rows), monitor__isnull=False).only("id"))
    for s in servers:
        s.load_profile = load_profile(rows[s.id])
        s.load_profile_at = now
    with transaction.atomic():
        Server.objects.bulk_update(servers, ["load_profile", "load_profile_at"], batch_size=500)
    return len(servers)
