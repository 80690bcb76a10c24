"""The beat job that records freshness objectives' hours and raises their burn alerts (crawlcore.beat's table)."""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0005_job_events"),
        ("crawladmin", "0035_freshness"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("alerts: freshness hours and burn alerts")]
