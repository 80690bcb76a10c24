"""Beat's job for crawl jobs: scheduled starts, time windows, runs that have nothing left. Data only.

The job is crawlcore.beat's table; a second migrate keeps an operator's edits (get_or_create).
"""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0020_jobs"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("crawladmin: crawl jobs' schedules and windows")]
