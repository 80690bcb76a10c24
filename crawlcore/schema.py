"""The database schema a command needs before it touches the crawl: one rule for every command that reads
or writes it (`crawl`, `rank`, `analyze`).

Embedded: create or upgrade the SQLite schema on the fly, so the embedded mode needs no setup step.
Cluster: migrations are an operator's step (they may need a maintenance window and must run once, not
from every machine that starts a command), so an outdated schema is refused instead.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.db.migrations.executor import MigrationExecutor


class SchemaOutdated(RuntimeError):
    pass


def schema_ensure() -> None:
    """Apply pending migrations in the embedded mode; in the cluster mode raise SchemaOutdated if any."""
    executor = MigrationExecutor(connections["default"])
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    if not settings.EMBEDDED:
        raise SchemaOutdated("the database schema is not up to date: run `python manage.py migrate` first")
    call_command("migrate", verbosity=0, interactive=False)
