"""Hand-written reads, for the dashboard's hottest pages: the queries of a server's page and of a site's dead
links, run on every view.

Each is an indexed lookup that PostgreSQL answers in a tenth of a millisecond, while building it through the
ORM costs about a millisecond of CPU. A server page makes six of them, which made the ORM the biggest part of
the page's cost. Parameters are always bound, never formatted into the SQL. Table and column names come from
the models' _meta, so a renamed table fails loudly rather than silently. Results come back as dicts, with
datetimes made aware (SQLite returns text) and JSON decoded (both backends return text).

The crawl's own fixed-shape statements (the claim of a batch, the dispatcher's counts) are written once for
both databases with `typed`, `one_of` and `skip_locked`, the only pieces of their SQL that differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from django.db import connection
from django.utils.dateparse import parse_datetime

from . import prepared
from ._vendor import is_postgres
from .params import array_param


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _param(value):
    if isinstance(value, datetime):  # as the ORM would pass it (SQLite: naive UTC text)
        return connection.ops.adapt_datetimefield_value(value)
    return value


def _datetime(value) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        value = parse_datetime(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _json(value):
    return json.loads(value) if isinstance(value, str | bytes) else value


def fetch(sql: str, params: Sequence = (), *, datetimes: Iterable[str] = (), jsons: Iterable[str] = ()) -> list[dict]:
    """Rows of `sql` as dicts; the columns named in `datetimes` and `jsons` converted."""
    with connection.cursor() as cursor:
        cursor.execute(sql, [_param(p) for p in params])
        names = [column[0] for column in cursor.description]
        rows = cursor.fetchall()
    datetimes, jsons = tuple(datetimes), tuple(jsons)
    out = []
    for row in rows:
        item = dict(zip(names, row, strict=True))
        for name in datetimes:
            item[name] = _datetime(item[name])
        for name in jsons:
            item[name] = _json(item[name])
        out.append(item)
    return out


def fetch_rows(sql: str, params: Sequence = (), *, prepare: bool = False) -> list[tuple]:
    """Rows of `sql` as tuples, unconverted (for long lists of numbers; see iso_utc for times). `prepare`: a
    fixed-shape statement a worker sends again and again, on PostgreSQL a prepared statement of the
    connection (crawlcore.db.prepared)."""
    with connection.cursor() as cursor:
        if prepare and is_postgres():
            prepared.execute(cursor, sql, params)
        else:
            cursor.execute(sql, [_param(p) for p in params])
        return cursor.fetchall()


def typed(kind: str) -> str:
    """The placeholder of a parameter of PostgreSQL type `kind`: `%s::kind` on PostgreSQL (a NULL, or a
    prepared statement's parameter, has a type to be planned with), a plain `%s` on SQLite."""
    return f"%s::{kind}" if is_postgres() else "%s"


def one_of(column: str, values: Sequence, kind: str) -> tuple[str, object]:
    """SQL for "`column` is one of `values`" (numbers or text) and its one parameter: `column = ANY(%s::kind[])`
    with the values as one array on PostgreSQL (one plan for any count, a row estimate the planner knows);
    `column IN (SELECT value FROM json_each(%s))` with them as one JSON text on SQLite (no bound on the count)."""
    if is_postgres():
        return f"{column} = ANY(%s::{kind}[])", array_param(list(values), kind)
    return f"{column} IN (SELECT value FROM json_each(%s))", json.dumps(list(values))


def skip_locked() -> str:
    """What ends a subquery that picks the rows an UPDATE claims: `FOR UPDATE SKIP LOCKED` on PostgreSQL, so
    the rows are locked as they are picked and those another claimer is locking are skipped (two claimers
    never get the same row, nor wait on each other). Nothing on SQLite: one writer at a time, the UPDATE
    and its subquery run under its lock."""
    return "FOR UPDATE SKIP LOCKED" if is_postgres() else ""


def iso_utc(column: str) -> str:
    """SQL for a timestamp column as ISO 8601 text in UTC ("2026-01-31T13:00:00+00:00", as Python's
    isoformat writes an aware UTC datetime): cheaper than turning hundreds of them into datetimes."""
    if is_postgres():
        return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')"""
    return f"strftime('%Y-%m-%dT%H:%M:%S+00:00', {column})"  # SQLite keeps naive UTC text


def placeholders(values: Sequence) -> str:
    return ", ".join(["%s"] * len(values))


def rows_by_values(table: str, column: str, values: Sequence[str], columns: Sequence[str]) -> list[tuple]:
    """`columns` of the rows of `table` whose text `column` is one of `values`. On PostgreSQL one statement,
    `column = ANY(array)` with the values as one parameter (one plan for any count, and a row estimate the
    planner knows, so it probes the column's index); elsewhere IN lists of at most 500."""
    if not values:
        return []
    picked = ", ".join(columns)
    with connection.cursor() as cur:
        if is_postgres():
            sql = f"SELECT {picked} FROM {table} WHERE {column} = ANY(%s::text[])"
            prepared.execute(cur, sql, [array_param(list(values), "text")])
            return cur.fetchall()
        out = []
        for i in range(0, len(values), 500):
            chunk = list(values[i : i + 500])
            cur.execute(f"SELECT {picked} FROM {table} WHERE {column} IN ({placeholders(chunk)})", chunk)
            out += cur.fetchall()
        return out
