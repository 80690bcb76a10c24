"""The beat job that looks up the monitored domains' registration expiry (crawlcore.beat's table)."""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0009_domain_expiry"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("monitoring: domain expiry (RDAP)")]
