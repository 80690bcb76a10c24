"""The link reports' beat jobs, in django-celery-beat's database schedule (editable in the admin).

The jobs are crawlcore.beat's table; a second migrate keeps an operator's edits (get_or_create).
"""

from __future__ import annotations

from django.db import migrations

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0001_link_breaks"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [beat_jobs_migration("reports: owners' digests")]
