"""Bulk statements the ORM has no cheap form for: one round trip for many rows, on PostgreSQL and SQLite.

The crawl's hot paths write tens of rows per page (links, URL updates); building a model instance per row
and one statement per update cost more than the crawl itself. These take plain tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection

PAGE = 1000  # rows per statement


def insert_ignore(table: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """INSERT the rows, skipping those that violate a unique constraint."""
    if not rows:
        return
    cols = ", ".join(columns)
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            from psycopg2.extras import execute_values

            execute_values(
                cur.cursor, f"INSERT INTO {table} ({cols}) VALUES %s ON CONFLICT DO NOTHING", rows, page_size=PAGE
            )
        else:
            marks = ", ".join("%s" for _ in columns)
            cur.executemany(f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({marks})", _adapted(rows))


def update_by_id(
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[tuple],
    *,
    where: str = "",
    guards: Sequence[tuple[str, str]] = (),
) -> list[int]:
    """UPDATE each row `(id, value, ..., guard value, ...)` of `table`: `columns` names and PostgreSQL
    types of the values to set, in order, then `guards` the columns that must still hold the given value
    for the row to be updated. `where` adds a constant guard (SQL over the table's columns, aliased `t`;
    no parameters). Returns the ids of the rows updated."""
    if not rows:
        return []
    guard = "".join(f" AND t.{name} = v.g_{name}" for name, _ in guards) + (f" AND {where}" if where else "")
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            from psycopg2.extras import execute_values

            sets = ", ".join(f"{name} = v.{name}" for name, _ in columns)
            names = ", ".join([name for name, _ in columns] + [f"g_{name}" for name, _ in guards])
            template = "(%s, " + ", ".join(f"%s::{kind}" for _, kind in (*columns, *guards)) + ")"
            done = execute_values(
                cur.cursor,
                f"UPDATE {table} AS t SET {sets} FROM (VALUES %s) AS v(id, {names}) WHERE t.id = v.id{guard} "
                "RETURNING t.id",
                rows,
                template=template,
                page_size=PAGE,
                fetch=True,
            )
            return [r[0] for r in done]
        sets = ", ".join(f"{name} = %s" for name, _ in columns)
        checks = "".join(f" AND t.{name} = %s" for name, _ in guards) + (f" AND {where}" if where else "")
        sql = f"UPDATE {table} AS t SET {sets} WHERE t.id = %s{checks}"
        n = len(columns)
        updated = []
        for row in _adapted(rows):
            cur.execute(sql, (*row[1 : n + 1], row[0], *row[n + 1 :]))
            if cur.rowcount == 1:
                updated.append(row[0])
        return updated


def upsert(
    table: str, columns: Sequence[str], rows: Sequence[tuple], *, key: str, returning: str = "id"
) -> list[tuple]:
    """INSERT the rows, or UPDATE every other column of the row with the same `key` (unique); returns
    `(returning, key)` of each row written."""
    if not rows:
        return []
    cols = ", ".join(columns)
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
    tail = f"ON CONFLICT ({key}) DO UPDATE SET {sets} RETURNING {returning}, {key}"
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            from psycopg2.extras import execute_values

            return execute_values(
                cur.cursor, f"INSERT INTO {table} ({cols}) VALUES %s {tail}", rows, page_size=PAGE, fetch=True
            )
        marks = ", ".join("%s" for _ in columns)
        out = []
        for row in _adapted(rows):
            cur.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks}) {tail}", row)
            out.extend(cur.fetchall())
        return out


def _adapted(rows: Sequence[tuple]) -> list[tuple]:
    """SQLite stores datetimes as text in Django's own format; raw parameters must use it too, or string
    comparisons with the ORM's values go wrong."""
    adapt = connection.ops.adapt_datetimefield_value
    return [tuple(adapt(v) if isinstance(v, datetime) else v for v in row) for row in rows]
