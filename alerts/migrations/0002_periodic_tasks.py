"""The alerts sender in django-celery-beat's database schedule (editable in the admin).

get_or_create: running the migration again, or after an operator changed the interval, keeps their edit.
"""

from __future__ import annotations

from django.db import migrations

JOBS = [
    # name, task, every (seconds), queue
    ("alerts: send notifications", "tasks.alerts.send", 10, "housekeeping"),
    ("alerts: write recurring maintenance windows", "tasks.alerts.maintenance", 600, "housekeeping"),
]


def create_jobs(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, every, queue in JOBS:
        interval, _ = IntervalSchedule.objects.get_or_create(every=every, period="seconds")
        PeriodicTask.objects.get_or_create(
            name=name, defaults={"task": task, "interval": interval, "queue": queue, "enabled": True}
        )


def remove_jobs(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name__in=[name for name, *_ in JOBS]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(create_jobs, remove_jobs)]
