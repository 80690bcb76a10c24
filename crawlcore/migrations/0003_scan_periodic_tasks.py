"""The scans' sweeps in django-celery-beat's database schedule. Data only.

The jobs are crawlcore.beat's table; a second migrate keeps an operator's edits (get_or_create).
"""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0002_periodic_tasks"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [
        beat_jobs_migration(
            "crawladmin: sweep Visited URLs to the active scan",
            "crawladmin: sweep due NoResponse URLs to the inactive scan",
        )
    ]
