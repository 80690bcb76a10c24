"""Status checks partitioned by time on PostgreSQL: the table, with its rows, becomes a table
partitioned by range of checked_at, with a DEFAULT partition (crawlcore.db.partitions.partition_table). Beat's
job that keeps partitions made ahead of time is migration 0014. SQLite keeps its plain table.

The rows are copied into the partitions under an exclusive lock: on a big table, run it in a quiet hour
(about a minute per 10 million rows on the benchmark machine). Rows older than the retention window go to
the DEFAULT partition, which the next prune empties.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone

from crawlcore.db.partitions import partition_table, unpartition_table

TABLE = "crawladmin_statuscheck"


def forward(apps, schema_editor):
    now = timezone.now()
    partition_table(
        TABLE,
        column="checked_at",
        span_days=settings.CHECK_PARTITION_DAYS,
        keep_from=now - timedelta(days=settings.CHECK_RETENTION_DAYS + settings.CHECK_PARTITION_DAYS),
        now=now,
        ahead_days=settings.CHECK_PARTITIONS_AHEAD,
        conn=schema_editor.connection,
    )


def backward(apps, schema_editor):
    unpartition_table(TABLE, conn=schema_editor.connection)


class Migration(migrations.Migration):
    # After monitoring's foreign key to the status checks is gone (its 0001 creates it, 0005 drops it): a
    # partitioned table cannot be referenced by `id` alone, so on a fresh database 0001 must run first. A
    # migration dependency, not an import: the crawl core still knows nothing of monitoring's code.
    dependencies = [
        ("crawladmin", "0012_status_check_throughput_index"),
        ("monitoring", "0005_status_check_no_db_constraint"),
    ]
    operations = [migrations.RunPython(forward, backward)]
