"""Status checks partitioned by time on real PostgreSQL: migration 0013 converts a table that has
rows, each row lands in the partition of its day, an insert with no partition for its day still succeeds
and beat's job gives it one, and retention drops whole old partitions and removes nothing newer."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from crawlcore.db.partitions import span_start
from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

TABLE = "crawladmin_statuscheck"
DAYS_AGO = (40, 15, 13, 3, 0)  # 40 and 15 are past the 14-day retention; 40 also before the window kept whole


def _rows(url: str, sql: str, params=None) -> list[tuple]:
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []


def _where(url: str) -> dict[int, str]:
    """check id -> the partition that holds it."""
    return dict(_rows(url, f"SELECT id, tableoid::regclass::text FROM {TABLE}"))


def _part(at: datetime) -> str:
    return f"{TABLE}_p{span_start(at, 1):%Y%m%d}"


def _shell(env: dict, code: str) -> dict:
    return json.loads(manage(env, "shell", "-c", code).stdout.strip().splitlines()[-1])


ENSURE = """
import json
from datetime import datetime
from crawlcore.services.check_history import check_partitions_ensure
print(json.dumps(check_partitions_ensure(now=datetime.fromisoformat({now!r}))))
"""

PRUNE = """
import json
from datetime import datetime
from monitoring.services.history import history_prune
out = history_prune(now=datetime.fromisoformat({now!r}))
print(json.dumps({{"checks": out.checks, "partitions": out.partitions}}))
"""

INSERT = """
import json
from datetime import datetime
from crawlcore.models import Server, StatusCheck
c = StatusCheck.objects.create(server=Server.objects.get(), requested_url="http://a.example/", category="normal",
                               latency_ms=1.0, agent="monitor", checked_at=datetime.fromisoformat({at!r}))
StatusCheck.objects.filter(id=c.id).update(status_code=200)  # a guarded write by id alone finds it
print(json.dumps({{"id": c.id, "status": StatusCheck.objects.get(id=c.id).status_code}}))
"""


def test_migration_partitions_existing_rows_and_retention_drops_whole_partitions(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "partitions-test-" * 4,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
            "CHECK_RETENTION_DAYS": "14",
            "CHECK_PARTITION_DAYS": "1",
            "CHECK_PARTITIONS_AHEAD": "7",
        }
        # A database from before the partitioning, with checks in it (and a status change pointing at one).
        manage(env, "migrate", "crawladmin", "0012", "--verbosity", "0")
        manage(env, "migrate", "monitoring", "0004", "--verbosity", "0")
        _rows(
            url,
            'INSERT INTO crawladmin_server (id, scheme, host, port, enabled, trusted, "group", '
            "excluded_reason, robots_txt, robots_kind, owner_name, owner_email, created_at) "
            "VALUES (1, 'http', 'a.example', 80, true, false, '', '', '', '', '', '', now())",
        )
        for n, days in enumerate(DAYS_AGO + (-30,)):  # and one stamped a month ahead (a clock far off)
            at = now - timedelta(days=days)
            _rows(
                url,
                f"INSERT INTO {TABLE} (id, server_id, requested_url, method, checked_at, category, failure_kind, "
                "detail, latency_ms, bytes, agent) VALUES (%s, 1, 'http://a.example/', 'GET', %s, 'normal', '', '', "
                "5, 0, 'monitor')",
                [100 + n, at],
            )
        _rows(url, "SELECT setval(pg_get_serial_sequence(%s, 'id'), 105)", [TABLE])
        _rows(
            url,
            "INSERT INTO monitoring_statuschange (server_id, from_status, to_status, at, reason, status_check_id) "
            "VALUES (1, 'normal', 'error', now(), 'test', 104)",
        )

        manage(env, "migrate", "--verbosity", "0")

        assert _rows(url, "SELECT relkind FROM pg_class WHERE relname = %s", [TABLE]) == [("p",)]
        where = _where(url)
        assert sorted(where) == [100, 101, 102, 103, 104, 105]  # every row, its id kept
        assert where[100] == f"{TABLE}_default"  # older than the retention window: left for the prune
        for check_id, days in zip((101, 102, 103, 104), DAYS_AGO[1:], strict=True):
            assert where[check_id] == _part(now - timedelta(days=days))
        assert where[105] == f"{TABLE}_default"  # a month ahead: no partition made that far
        ahead = {_part(now + timedelta(days=d)) for d in range(8)}
        names = {
            r[0]
            for r in _rows(
                url, "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = %s::regclass", [TABLE]
            )
        }
        assert ahead <= names
        indexes = {r[0] for r in _rows(url, "SELECT indexname FROM pg_indexes WHERE tablename = %s", [TABLE])}
        assert {"check_server_time_idx", "check_pending_idx", "check_get_throughput_idx", f"{TABLE}_pkey"} <= indexes
        pk = _rows(
            url,
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
            [TABLE],
        )
        assert pk == [("PRIMARY KEY (id, checked_at)",)]
        assert _rows(url, "SELECT status_check_id FROM monitoring_statuschange") == [(104,)]
        assert _rows(
            url, "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'", [TABLE]
        ) == [(2,)]

        # New rows take ids after the old ones and go to their day's partition; an update by id finds them.
        made = _shell(env, INSERT.format(at=now.isoformat()))
        assert made["id"] > 105 and made["status"] == 200
        assert _where(url)[made["id"]] == _part(now)

        # A check in a month with no partition yet: the DEFAULT partition takes it, beat's job gives it one.
        later = now + timedelta(days=60)
        stray = _shell(env, INSERT.format(at=later.isoformat()))["id"]
        assert _where(url)[stray] == f"{TABLE}_default"
        created = _shell(env, ENSURE.format(now=later.isoformat()))
        assert _part(later) in created
        assert _where(url)[stray] == _part(later)
        assert _where(url)[105] == f"{TABLE}_default"  # a month ahead of today, outside that run's window

        # A day inside the retention window whose partition went missing: its row waits in the DEFAULT
        # partition, and beat's next run gives that day a partition and moves the row there.
        gap = now - timedelta(days=6)
        _rows(url, f'DROP TABLE "{_part(gap)}"')
        late = _shell(env, INSERT.format(at=gap.isoformat()))["id"]
        assert _where(url)[late] == f"{TABLE}_default"
        assert _part(gap) in _shell(env, ENSURE.format(now=now.isoformat()))
        assert _where(url)[late] == _part(gap)

        # Retention at 14 days: the partition of day 15 goes whole, and the old DEFAULT row.
        pruned = _shell(env, PRUNE.format(now=now.isoformat()))
        left = _where(url)
        assert 100 not in left and 101 not in left
        assert {102, 103, 104, 105, made["id"], stray, late} <= set(left)  # nothing newer than the cutoff is removed
        assert pruned["checks"] == 2 and pruned["partitions"] >= 1
        names = {
            r[0]
            for r in _rows(
                url, "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = %s::regclass", [TABLE]
            )
        }
        assert _part(now - timedelta(days=15)) not in names and _part(now - timedelta(days=13)) in names
        assert all(n == f"{TABLE}_default" or n >= _part(now - timedelta(days=15)) for n in names)

        # Back to a plain table, every row kept.
        manage(env, "migrate", "crawladmin", "0012", "--verbosity", "0")
        assert _rows(url, "SELECT relkind FROM pg_class WHERE relname = %s", [TABLE]) == [("r",)]
        assert set(_where(url)) == set(left)
