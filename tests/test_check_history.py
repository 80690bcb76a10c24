"""Status-check retention on a plain table (SQLite, the embedded mode): every agent's checks older than
CHECK_RETENTION_DAYS go as rows, newer ones stay; partition upkeep has nothing to do. The partitioned
PostgreSQL table is tested in test_check_partitions_pg.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from crawlcore.db import partitions
from crawlcore.models import Server, StatusCheck
from crawlcore.services.check_history import check_partitions_ensure, checks_prune, retention_cutoff
from monitoring.services.history import history_prune

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def _checks(server: Server, *spec: tuple[str, float]) -> None:
    StatusCheck.objects.bulk_create(
        StatusCheck(
            server=server,
            requested_url="http://a.test/",
            category="normal",
            latency_ms=1.0,
            agent=agent,
            checked_at=NOW - timedelta(days=days),
        )
        for agent, days in spec
    )


@pytest.mark.django_db
@override_settings(CHECK_RETENTION_DAYS=14)
def test_retention_deletes_every_agents_old_checks_and_keeps_newer_ones():
    server = Server.objects.create(scheme="http", host="a.test", port=80)
    _checks(server, ("monitor", 15), ("load", 30), ("active_scan", 14.01), ("monitor", 13.99), ("load", 1))
    out = history_prune(now=NOW)
    assert (out.checks, out.partitions) == (3, 0)
    assert sorted(StatusCheck.objects.values_list("agent", flat=True)) == ["load", "monitor"]
    assert all(c >= NOW - timedelta(days=14) for c in StatusCheck.objects.values_list("checked_at", flat=True))


@pytest.mark.django_db
@override_settings(CHECK_RETENTION_DAYS=3)
def test_a_plain_table_has_no_partitions_to_make_and_prunes_by_rows():
    server = Server.objects.create(scheme="http", host="a.test", port=80)
    _checks(server, ("monitor", 4), ("monitor", 2))
    assert not partitions.is_partitioned(StatusCheck._meta.db_table)
    assert check_partitions_ensure(now=NOW) == []
    assert retention_cutoff(now=NOW) == NOW - timedelta(days=3)
    assert checks_prune(before=retention_cutoff(now=NOW)).rows == 1
    assert StatusCheck.objects.count() == 1


def test_spans_are_whole_utc_days_from_the_epoch():
    at = datetime(2026, 3, 2, 23, 59, tzinfo=UTC)
    assert partitions.span_start(at, 1) == datetime(2026, 3, 2, tzinfo=UTC)
    week = partitions.span_start(at, 7)
    assert week <= at < week + timedelta(days=7) and (week - partitions.EPOCH).days % 7 == 0


def test_missing_ranges_fill_gaps_without_overlapping_partitions_of_another_span():
    day = datetime(2026, 3, 2, tzinfo=UTC)
    existing = [
        partitions.Partition("d", None, None),
        partitions.Partition("w", day + timedelta(days=1), day + timedelta(days=3)),
    ]
    got = partitions._missing_ranges(existing, day, day + timedelta(days=5), 1)
    assert got == [(day + timedelta(days=d), day + timedelta(days=d + 1)) for d in (0, 3, 4)]
