"""The commands' schema rule (crawlcore.schema): the cluster refuses to run on an outdated schema."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.migrations.executor import MigrationExecutor

from crawlcore.schema import SchemaOutdated, schema_ensure

pytestmark = pytest.mark.django_db


def test_an_up_to_date_schema_lets_a_cluster_command_run(settings):
    settings.EMBEDDED = False
    schema_ensure()


@pytest.mark.parametrize("command", [("crawl", "--no-progress"), ("rank", "--no-progress"), ("analyze",)])
def test_every_command_refuses_an_outdated_cluster_schema(settings, monkeypatch, command):
    settings.EMBEDDED = False
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets, clean_start=False: [object()])
    with pytest.raises(SchemaOutdated):
        schema_ensure()
    with pytest.raises(CommandError, match="manage.py migrate"):
        call_command(*command, stdout=io.StringIO(), stderr=io.StringIO())
