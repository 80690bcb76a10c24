"""The beat job that sends the owners' monthly uptime / SLA reports (crawlcore.beat's table)."""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0003_sla_reports"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("reports: owners' monthly SLA reports")]
