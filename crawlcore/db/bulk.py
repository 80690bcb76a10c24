"""Bulk statements the ORM has no cheap form for: one round trip for many rows, on PostgreSQL and SQLite.

The crawl's hot paths write tens of rows per page (links, URL updates); building a model instance per row
and one statement per update cost more than the crawl itself. insert_ignore, update_by_id and upsert take
plain tuples; insert_returning_ids and update_rows take dicts and model instances (the monitor's checks);
insert_plain and update_plain plain values of a model's fields (the import of a server list).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import connection, models
from django.db.models import Model
from django.utils import timezone

from . import prepared
from ._vendor import is_postgres
from .params import array_param, by_key_only, column_types

PAGE = 1000  # rows per statement


def insert_ignore(table: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """INSERT the rows, skipping those that violate a unique constraint."""
    if not rows:
        return
    cols = ", ".join(columns)
    with connection.cursor() as cur:
        if is_postgres():
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
        if is_postgres():
            # The rows are found by id; the guards only filter them (params.by_key_only: no index of a guard column).
            guard = f" AND {by_key_only(guard[5:])}" if guard else ""
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
    table: str,
    columns: Sequence[str],
    rows: Sequence[tuple],
    *,
    key: str,
    returning: str = "id",
    update: Mapping[str, str] | None = None,
) -> list[tuple]:
    """INSERT the rows, or UPDATE every other column of the row with the same `key` (unique); returns
    `(returning, key)` of each row written. `update` gives some columns an SQL expression of their own
    instead (over `excluded.<column>` and `<table>.<column>`, the row as it was), written in SQL that
    PostgreSQL and SQLite both read."""
    if not rows:
        return []
    cols = ", ".join(columns)
    update = update or {}
    # `update` may also set a column the INSERT does not write (it keeps its default on a new row).
    names = [*columns, *(c for c in update if c not in columns)]
    sets = ", ".join(f"{c} = {update.get(c, f'excluded.{c}')}" for c in names if c != key)
    tail = f"ON CONFLICT ({key}) DO UPDATE SET {sets} RETURNING {returning}, {key}"
    with connection.cursor() as cur:
        if is_postgres():
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


def insert_returning_ids(model: type[Model], rows: Sequence[dict]) -> list[int]:
    """INSERT one row of `model` per dict (field name -> value, the same names in each), returning the new
    ids in the rows' order. PostgreSQL: INSERT ... VALUES ... RETURNING in chunks of PAGE, plain values and
    no model instances (bulk_create's per-field preparation was the monitor's largest cost left after its
    state UPDATE); elsewhere bulk_create."""
    if not rows:
        return []
    if not is_postgres():
        created = model.objects.bulk_create([model(**row) for row in rows], batch_size=500)
        return [obj.pk for obj in created]
    meta = model._meta
    names = list(rows[0])
    qn = connection.ops.quote_name
    columns = ", ".join(qn(meta.get_field(n).column) for n in names)
    row_sql = "(" + ", ".join(["%s"] * len(names)) + ")"
    ids: list[int] = []
    with connection.cursor() as cursor:
        for i in range(0, len(rows), PAGE):
            chunk = rows[i : i + PAGE]
            cursor.execute(
                f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES {', '.join([row_sql] * len(chunk))} "
                f"RETURNING {qn(meta.pk.column)}",
                [row[n] for row in chunk for n in names],
            )
            ids += [r[0] for r in cursor.fetchall()]  # in VALUES order, as bulk_create relies on too
    return ids


_SCALARS = frozenset({type(None), str, int, bool, float, datetime})  # a constant the driver adapts as it is


def insert_new(model: type[Model], rows: Sequence[dict], *, unique: str, returning: Sequence[str]) -> list[tuple]:
    """INSERT the rows (field name -> value; a field left out gets its default, `auto_now_add` the time now)
    that do not violate the unique constraint on `unique`, in one statement of one parameter a column on
    PostgreSQL; `returning` of the rows inserted. A row another transaction inserts meanwhile is skipped
    (the caller looks it up). No model instances: bulk_create's per-field preparation of each row cost more
    than the insert. Elsewhere bulk_create(ignore_conflicts) and no rows returned."""
    if not rows:
        return []
    meta = model._meta
    # In the order of the unique key: two statements inserting some of the same keys wait for each other
    # key by key, and in different orders they deadlock (each deadlock a second lost and an extract batch
    # retried, many of them in a crawl whose servers link to each other's new pages).
    rows = sorted(rows, key=lambda row: row[unique])
    if not is_postgres():
        model.objects.bulk_create([model(**row) for row in rows], ignore_conflicts=True, batch_size=500)
        return []
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    defaults = {
        f.attname: now if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False) else f.get_default()
        for f in fields
    }
    given = {f.attname: f.name for f in fields}
    names = [f.attname for f in fields if f.db_default is models.NOT_PROVIDED or f.name in rows[0]]
    kinds = dict(column_types(model, [given[n] for n in names]))
    qn = connection.ops.quote_name
    columns = [meta.get_field(given[n]).column for n in names]
    # Rows that all name the same fields (the usual case: one caller builds them alike) are read column by
    # column with one lookup a value, and a field none of them names is its default, sent once as a constant
    # of the statement rather than as an array of the same value (a URL row has a dozen such columns).
    first = rows[0].keys()
    alike = all(row.keys() == first for row in rows)
    arrays, constants = [], []  # (column, parameter)
    for name, column in zip(names, columns, strict=True):
        field = given[name]
        if not alike:
            values = [row.get(field, row.get(name, defaults[name])) for row in rows]
        elif field in first or name in first:
            key = field if field in first else name
            values = [row[key] for row in rows]
        elif type(defaults[name]) in _SCALARS:
            constants.append((column, defaults[name]))
            continue
        else:
            values = [defaults[name]] * len(rows)
        arrays.append((column, array_param(values, kinds[column])))
    picked = "".join(f", %s::{kinds[c]}" for c, _ in constants)
    unnest = ", ".join(f"%s::{kinds[c]}[]" for c, _ in arrays)
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(c) for c, _ in arrays + constants)}) "
        f"SELECT u.*{picked} FROM unnest({unnest}) AS u "
        f"ON CONFLICT ({qn(meta.get_field(unique).column)}) DO NOTHING "
        f"RETURNING {', '.join(qn(meta.get_field(r).column) for r in returning)}"
    )
    params = [v for _, v in constants] + [v for _, v in arrays]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, params)
        return cursor.fetchall()


def update_rows(objs: Sequence[Model], fields: Sequence[str]) -> None:
    """Write `fields` of these instances of one model, by primary key: one UPDATE ... FROM (VALUES ...) per
    PAGE rows on PostgreSQL. Django's bulk_update builds a CASE WHEN per field and row in Python: it took
    ~70% of a monitor worker's time in the benchmark (bench/monitor_checks.py); elsewhere it is used."""
    if not objs:
        return
    model = type(objs[0])
    if not is_postgres():
        model.objects.bulk_update(objs, list(fields))
        return
    meta = model._meta
    columns_of = [meta.pk, *(meta.get_field(name) for name in fields)]
    columns = [f.column for f in columns_of]
    types = [f.db_type(connection) for f in columns_of]
    qn = connection.ops.quote_name
    row = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
    assignments = ", ".join(f"{qn(c)} = v.{qn(c)}" for c in columns[1:])
    attnames = [f.attname for f in columns_of]
    for i in range(0, len(objs), PAGE):
        chunk = objs[i : i + PAGE]
        # Plain values (str, int, aware datetime, None) that the driver adapts; the casts in the row
        # give NULLs their column types.
        params = [getattr(m, a) for m in chunk for a in attnames]
        sql = (
            f"UPDATE {qn(meta.db_table)} AS m SET {assignments} "
            f"FROM (VALUES {', '.join([row] * len(chunk))}) AS v({', '.join(qn(c) for c in columns)}) "
            f"WHERE m.{qn(columns[0])} = v.{qn(columns[0])}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def insert_unsynced_many(model: type[Model], columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> list[tuple]:
    """INSERT rows committed on their own at once, in one statement: `columns` are `(field name, PostgreSQL
    type)`, each row their values in that order. Returns `(id, first value)` of each row inserted (RETURNING
    gives no order to rely on: the caller matches rows by their first value). On PostgreSQL one round trip in
    autocommit, and set_config(..., true) turns synchronous_commit off for its own transaction only: its
    commit does not wait for the WAL flush. A killed worker or a dropped connection cannot lose a committed
    row; only a crash of PostgreSQL itself within a fraction of a second could. Elsewhere plain creates."""
    if not rows:
        return []
    meta = model._meta
    if not is_postgres():
        return [
            (model.objects.create(**dict(zip((n for n, _ in columns), row, strict=True))).pk, row[0]) for row in rows
        ]
    qn = connection.ops.quote_name
    names = ", ".join(qn(meta.get_field(name).column) for name, _ in columns)
    arrays = ", ".join(f"%s::{kind}[]" for _, kind in columns)
    params = [array_param([row[i] for row in rows], kind) for i, (_, kind) in enumerate(columns)]
    first = qn(meta.get_field(columns[0][0]).column)
    sql = (
        "WITH no_wait AS (SELECT set_config('synchronous_commit', 'off', true)) "
        f"INSERT INTO {qn(meta.db_table)} ({names}) SELECT u.* FROM no_wait, unnest({arrays}) AS u "
        f"RETURNING {qn(meta.pk.column)}, {first}"
    )
    with connection.cursor() as cur:
        prepared.execute(cur, sql, params)
        return cur.fetchall()


def insert_plain(
    model: type[Model], rows: Sequence[dict], *, constant: dict | None = None, ignore_conflicts: bool = False
) -> None:
    """INSERT plain rows (field name -> value); every other column takes the model's default, prepared once
    for all rows (the defaults are constants here, auto_now_add a single time)."""
    if not rows:
        return
    meta = model._meta
    template = model(**(constant or {}))
    fields = [f for f in meta.concrete_fields if f is not meta.auto_field]
    given = [f for f in fields if f.name in rows[0] or f.attname in rows[0]]
    fixed = [f for f in fields if f not in given]
    per_row = [f.name for f in fixed if f.has_default() and callable(f.default)]
    if per_row:  # one value for every row would be wrong (a uuid): such fields must be given
        raise ValueError(f"insert_plain: {model.__name__} fields with callable defaults not given: {per_row}")
    fixed_values = [f.get_db_prep_save(f.pre_save(template, add=True), connection) for f in fixed]
    qn = connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in [*given, *fixed])
    values = [[row.get(f.name, row.get(f.attname)) for f in given] + fixed_values for row in rows]
    with connection.cursor() as cursor:
        if is_postgres():
            from psycopg2.extras import execute_values

            conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
            sql = f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES %s{conflict}"
            execute_values(cursor.cursor, sql, values, page_size=1000)
            return
        marks = ", ".join(["%s"] * len(given + fixed))
        verb = "INSERT OR IGNORE" if ignore_conflicts else "INSERT"
        cursor.executemany(f"{verb} INTO {qn(meta.db_table)} ({columns}) VALUES ({marks})", values)


def update_plain(model: type[Model], names: Sequence[str], rows: Sequence[tuple]) -> None:
    """UPDATE each row `(primary key, value, ...)`, the values of the `names` columns: a thousand rows per
    statement on PostgreSQL (UPDATE ... FROM (VALUES ...)), one executemany elsewhere. The values are
    plain (text, numbers, booleans, None): the driver adapts them as they are. (update_rows takes model
    instances and uses Django's bulk_update on SQLite: 20 s per 10,000 rows of the server import.)"""
    if not rows:
        return
    meta = model._meta
    fields = [meta.pk, *(meta.get_field(name) for name in names)]
    qn = connection.ops.quote_name
    table, key = qn(meta.db_table), qn(meta.pk.column)
    with connection.cursor() as cursor:
        if not is_postgres():
            sets = ", ".join(f"{qn(f.column)} = %s" for f in fields[1:])
            cursor.executemany(f"UPDATE {table} SET {sets} WHERE {key} = %s", [(*r[1:], r[0]) for r in rows])
            return
        types = [f.rel_db_type(connection) if f.is_relation else f.db_type(connection) for f in fields]
        row = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
        sets = ", ".join(f"{qn(f.column)} = v.{qn(f.column)}" for f in fields[1:])
        columns = ", ".join(qn(f.column) for f in fields)
        for i in range(0, len(rows), 1000):
            chunk = rows[i : i + 1000]
            cursor.execute(
                f"UPDATE {table} AS t SET {sets} FROM (VALUES {', '.join([row] * len(chunk))}) AS v({columns}) "
                f"WHERE t.{key} = v.{key}",
                [value for r in chunk for value in r],
            )


def _adapted(rows: Sequence[tuple]) -> list[tuple]:
    """SQLite stores datetimes as text in Django's own format; raw parameters must use it too, or string
    comparisons with the ORM's values go wrong."""
    adapt = connection.ops.adapt_datetimefield_value
    return [tuple(adapt(v) if isinstance(v, datetime) else v for v in row) for row in rows]
