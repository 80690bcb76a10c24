"""The dashboard's beat jobs were renamed from `dashboard.tasks.*` to `tasks.dashboard.*` (the module they live
in): a database migrated before keeps its schedule, with the operator's edits, under the new names; the step
back restores the old ones; and a message queued under an old name before the upgrade still runs."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django_celery_beat.models import IntervalSchedule, PeriodicTask

import tasks.dashboard
from crawladmin.celery import app

RENAMES = importlib.import_module("dashboard.migrations.0010_beat_task_names")
ROLLUPS = ("dashboard.tasks.refresh_rollups", "tasks.dashboard.refresh_rollups")
DEAD_LINKS = ("dashboard.tasks.refresh_dead_links", "tasks.dashboard.refresh_dead_links")


def _historical_apps():
    return MigrationLoader(connection).project_state().apps


@pytest.mark.django_db
def test_an_old_schedule_moves_to_the_new_names_with_its_edits_and_back():
    for old, new in (ROLLUPS, DEAD_LINKS):
        PeriodicTask.objects.filter(task=new).update(task=old)  # as a database migrated before the rename
    edited = IntervalSchedule.objects.create(every=90, period="seconds")
    PeriodicTask.objects.filter(task=ROLLUPS[0]).update(interval=edited, enabled=False)

    RENAMES.forward(_historical_apps(), None)
    job = PeriodicTask.objects.get(task=ROLLUPS[1])
    assert (job.interval_id, job.enabled) == (edited.id, False)
    assert PeriodicTask.objects.filter(task=DEAD_LINKS[1]).count() == 1
    assert not PeriodicTask.objects.filter(task__in=[ROLLUPS[0], DEAD_LINKS[0]]).exists()

    RENAMES.backward(_historical_apps(), None)
    assert PeriodicTask.objects.filter(task__in=[ROLLUPS[0], DEAD_LINKS[0]]).count() == 2
    assert not PeriodicTask.objects.filter(task__in=[ROLLUPS[1], DEAD_LINKS[1]]).exists()


@pytest.mark.parametrize(
    ("names", "service"), [(ROLLUPS, "rollups_refresh"), (DEAD_LINKS, "dead_links_refresh")], ids=["rollups", "links"]
)
def test_a_message_under_the_old_name_runs_the_same_job_as_the_new_name(monkeypatch, names, service):
    monkeypatch.setattr(tasks.dashboard.rollups, service, lambda: {"ran": service})
    app.loader.import_default_modules()
    old, new = names
    assert app.tasks[old].apply().get() == app.tasks[new].apply().get() == {"ran": service}
