"""The "viewer" and "operator" groups, as the data migration creates them; `groups_ensure()` puts them
back where a flush removed them (transactional tests flush every table, migration data included)."""

from __future__ import annotations

import importlib

from django.apps import apps

_migration = importlib.import_module("dashboard.migrations.0001_groups")


def groups_ensure() -> None:
    _migration.create_groups(apps, None)
