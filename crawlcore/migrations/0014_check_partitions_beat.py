"""Beat's job that keeps the status-check partitions made ahead of time. Data only.

The job is crawlcore.beat's table; a second migrate keeps an operator's edits (get_or_create).
"""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0013_status_check_partitions"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("crawladmin: status-check partitions ahead")]
