"""The dashboard's beat jobs are named after the module they live in (tasks/dashboard.py): their rows' task
becomes `tasks.dashboard.*` instead of `dashboard.tasks.*`, whatever name, interval or queue an operator gave
them. Reversible. The names are written here, not read from crawlcore.beat: a migration is history.

A queryset update sends no signal, so the change is announced to a running beat (django-celery-beat reloads
its schedule when PeriodicTasks.last_update moves) by hand, as PeriodicTasks.update_changed does.
"""

from __future__ import annotations

from django.db import migrations
from django.utils import timezone

RENAMED = (
    ("dashboard.tasks.refresh_rollups", "tasks.dashboard.refresh_rollups"),
    ("dashboard.tasks.refresh_dead_links", "tasks.dashboard.refresh_dead_links"),
)


def _rename(apps, pairs) -> None:
    periodic_task = apps.get_model("django_celery_beat", "PeriodicTask")
    changed = sum(periodic_task.objects.filter(task=old).update(task=new) for old, new in pairs)
    if changed:
        tracker = apps.get_model("django_celery_beat", "PeriodicTasks")
        tracker.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


def forward(apps, schema_editor) -> None:
    _rename(apps, RENAMED)


def backward(apps, schema_editor) -> None:
    _rename(apps, [(new, old) for old, new in RENAMED])


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0009_api_tokens"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forward, backward)]
