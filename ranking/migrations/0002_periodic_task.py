"""The ranking beat job, in django-celery-beat's database schedule (editable in the admin): daily.

get_or_create: running the migration again, or after an operator changed the interval, keeps their edit.
"""

from __future__ import annotations

from django.db import migrations

NAME = "ranking: BlockRank the crawl's link graph"
TASK = "tasks.rank.rank_crawl"


def create_job(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=1, period="days")
    PeriodicTask.objects.get_or_create(
        name=NAME, defaults={"task": TASK, "interval": interval, "queue": "housekeeping", "enabled": True}
    )


def remove_job(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("ranking", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(create_job, remove_job)]
