"""Cheap row counts of big tables, for progress bars and the dashboard's table sizes."""

from __future__ import annotations

from django.db import connection
from django.db.models import Model

from ._vendor import is_postgres


def table_rows(model: type[Model]) -> int:
    """Rows in the table: PostgreSQL's planner estimate (pg_class.reltuples, kept by autovacuum's ANALYZE)
    instead of a COUNT(*) that would read the whole table; an exact count elsewhere (SQLite: the embedded
    mode, small by nature).

    reltuples is -1 for a table never analysed (PostgreSQL 14 and later): its size is then unknown, not
    zero — a table bulk-loaded a moment ago may hold millions of rows — so it is counted exactly, once,
    until autovacuum's first ANALYZE. (The ranking's progress bar used to read -1 as 0 and started with
    no total; the dashboard counted.)"""
    if is_postgres():
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
            row = cursor.fetchone()
        if row and row[0] >= 0:  # -1: never analysed yet
            return int(row[0])
    return model.objects.count()
