"""Several writes that depend on one another, described once and run as ONE statement on PostgreSQL.

A batch's rows go in once, as one array per column (`unnest`), and every write of the chain is a
data-modifying CTE over them: an UPDATE guarded as the caller says, then INSERTs limited to the rows an
earlier write returned (the events and pages of the URLs that really moved). One round trip, one
statement to parse and plan, and one transaction of its own when no atomic block is open (no BEGIN or
COMMIT to send): either every write of the chain happens or none does.

All the CTEs see the same snapshot, so no write reads another's rows except through what it RETURNS:
that is the only dependency a chain expresses (`after`). Elsewhere (SQLite, which has no data-modifying
CTEs) the same writes run step by step in one transaction, each one statement over its input as VALUES
(SQLite 3.35 or later: UPDATE … FROM and RETURNING), the rows of an `after` picked from what the earlier
write returned: the same rows, the same guards, the same results, as long as no write reads a table an
earlier one wrote other than through `after` (step by step, it would see those rows). An `Sql` text is
therefore SQL that both databases read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from . import fulltext, prepared
from ._vendor import is_postgres
from .params import array_param, by_key_only


@dataclass(frozen=True)
class Const:
    """A value for every row (one parameter), of a PostgreSQL type."""

    value: object
    kind: str


@dataclass(frozen=True)
class Sql:
    """An SQL expression over the write's table (by its name) and its input (by the input's name), written
    in SQL that PostgreSQL and SQLite both read: the one place a chain takes SQL text."""

    text: str


@dataclass(frozen=True)
class SearchVector:
    """An Update's value for a page's full-text index (crawlcore.db.fulltext), from the index-form columns
    `ix_title`, `ix_heads`, `ix_anchors`, `ix_body` of its input (the column it is given under is not
    written itself). PostgreSQL: those columns of the row, set by the same UPDATE, from which a batch apart
    builds its tsvector (fulltext.index_pending). SQLite: the FTS5 rows of the pages the UPDATE changed,
    written after it."""


# A column of the write's input, a constant, an expression, or the pages' full-text index.
Value = str | Const | Sql | SearchVector


@dataclass(frozen=True)
class Input:
    """Rows given to a chain: `(name, PostgreSQL type)` of each column, then the rows' values in that order."""

    columns: Sequence[tuple[str, str]]
    rows: Sequence[tuple]


@dataclass(frozen=True)
class Update:
    """`UPDATE table SET column = value … WHERE id = <key input column> AND column = guard … AND where` for
    each row of the input `source`; returns `returning` of the rows it changed."""

    name: str
    table: str
    key: str
    set: Mapping[str, Value]
    guards: Mapping[str, Value] = field(default_factory=dict)
    where: Sql | None = None
    returning: Sequence[str] = ("id",)
    source: str = "v"
    # `(column, low, high)`: the rows' `column` lies between the two, said to the planner as it is (not a
    # guard): on a table partitioned by that column, only the partitions of that range are planned and read.
    within: tuple[str, Const, Const] | None = None


@dataclass(frozen=True)
class Insert:
    """`INSERT INTO table (columns) SELECT values FROM input` for the input rows whose `after[1]` column is an
    id returned by the earlier write `after[0]`, and whose boolean input column `where` is true. With
    `conflict` (a unique column): an upsert, each other column set to `update`'s SQL (over
    `excluded.<column>` and `<table>.<column>`) or to the new value. With `ignore_conflicts`, a row that
    would break a unique index is left out; with `conflict` too (its columns, comma-separated), only that
    index's is: the others (a serial primary key) are not probed before each row."""

    name: str
    table: str
    values: Mapping[str, Value]
    after: tuple[str, str] | None = None
    where: str | None = None
    conflict: str | None = None
    update: Mapping[str, str] = field(default_factory=dict)
    ignore_conflicts: bool = False  # ON CONFLICT [(conflict)] DO NOTHING
    returning: Sequence[str] = ()
    source: str = "v"


def chain(inputs: Mapping[str, Input], writes: Sequence[Update | Insert]) -> dict[str, list[list]]:
    """Run `writes` in order over their inputs (by name: each a CTE of that name); what each write returned,
    by its name (a list of lists of its `returning` columns). One statement on PostgreSQL; elsewhere one
    statement a write (or a few, for a long input), in one transaction: inside a caller's, part of it, as the
    one statement would be."""
    clash = set(inputs) & {w.name for w in writes}
    if clash:
        raise ValueError(f"chain: {', '.join(sorted(clash))} names both an input and a write")
    for w in writes:
        if isinstance(w, Insert) and w.after is not None:
            _first(writes, w.after[0])
    if is_postgres():
        return _one_statement(inputs, writes)
    with transaction.atomic(savepoint=False):
        return _step_by_step(inputs, writes)


def _one_statement(inputs: Mapping[str, Input], writes: Sequence[Update | Insert]) -> dict[str, list[list]]:
    params: list = []

    def value(v: Value, source: str) -> str:
        if isinstance(v, Const):
            params.append(v.value)
            return f"%s::{v.kind}"
        if isinstance(v, Sql):
            return v.text
        return f"{source}.{v}"

    def assign(column: str, v: Value, source: str) -> str:
        if isinstance(v, SearchVector):
            return fulltext.pending_sets(source)
        return f"{column} = {value(v, source)}"

    ctes = []
    for name, given in inputs.items():
        # One array per column, unnested together: any number of rows, values adapted by the driver.
        names = ", ".join(column for column, _ in given.columns)
        arrays = ", ".join(f"%s::{kind}[]" for _, kind in given.columns)
        params += [array_param([row[i] for row in given.rows], kind) for i, (_, kind) in enumerate(given.columns)]
        ctes.append(f"{name} AS (SELECT * FROM unnest({arrays}) AS u({names}))")
    for w in writes:
        ret = f" RETURNING {', '.join(f'{w.table}.{c}' for c in w.returning)}" if w.returning else ""
        src = w.source
        if isinstance(w, Update):
            sets = ", ".join(assign(c, x, src) for c, x in w.set.items())
            # The ids once more as one array: `id = ANY(array)` is an index condition whose row count the
            # planner knows exactly, so it probes the primary key instead of scanning a table whose
            # statistics, in a fast-growing crawl, still say it is small (hash join over a sequential scan).
            # (Parameters in the order of their places in the text: the SET values, these ids, the span, the guards.)
            given = inputs[src]
            at = [c for c, _ in given.columns].index(w.key)
            params.append(array_param([row[at] for row in given.rows], "bigint"))
            span, guard = _span_and_guard(w, lambda x, src=src: value(x, src))
            found = f"{w.table}.id = ANY(%s::bigint[]){span} AND {w.table}.id = {src}.{w.key}"
            sql = f"UPDATE {w.table} SET {sets} FROM {src} WHERE {found}{guard}{ret}"
        else:
            cols = ", ".join(w.values)
            picked = ", ".join(value(x, src) for x in w.values.values())
            source = src
            if w.after is not None:
                step, col = w.after
                source += f" JOIN {step} ON {step}.{_first(writes, step)} = {src}.{col}"
            where = f" WHERE {src}.{w.where}" if w.where else ""
            sql = f"INSERT INTO {w.table} ({cols}) SELECT {picked} FROM {source}{where}{_on_conflict(w)}{ret}"
        ctes.append(f"{w.name} AS ({sql})")
    outs = [w for w in writes if w.returning]
    select = ", ".join(
        f"(SELECT coalesce(json_agg(json_build_array({', '.join(w.returning)})), '[]') FROM {w.name})" for w in outs
    )
    sql = f"WITH {', '.join(ctes)} SELECT {select or 'NULL'}"
    with connection.cursor() as cur:
        prepared.execute(cur, sql, params)  # the same few shapes, thousands of times: parsed once a connection
        got = cur.fetchone()
    return {w.name: (x if isinstance(x, list) else json.loads(x)) for w, x in zip(outs, got, strict=False)}


def _step_by_step(inputs: Mapping[str, Input], writes: Sequence[Update | Insert]) -> dict[str, list[list]]:
    """The chain one write at a time (the caller holds the transaction): each write's input as VALUES under
    the input's name, so its values and `Sql` read as in the one statement; an `after` as the input rows whose
    column is among what the earlier write returned (a semi-join: the JOIN of the one statement, over ids)."""
    returned: dict[str, list[tuple]] = {}
    for w in writes:
        given = inputs[w.source]
        names = [c for c, _ in given.columns]
        rows = list(given.rows)
        if isinstance(w, Update):
            got = _update(w, names, rows)
            returned[w.name] = [row[1:] for row in got]
            if any(isinstance(x, SearchVector) for x in w.set.values()):
                _index(names, rows, w.key, {row[0] for row in got})
            continue
        if w.after is not None:
            step, column = w.after
            done = {row[0] for row in returned[step]}
            at = names.index(column)
            rows = [row for row in rows if row[at] in done]
        if w.where:
            at = names.index(w.where)
            rows = [row for row in rows if row[at]]
        returned[w.name] = _insert(w, names, rows)
    return {w.name: [list(row) for row in returned[w.name]] for w in writes if w.returning}


def _update(w: Update, names: list[str], rows: list[tuple]) -> list[tuple]:
    """Each row's UPDATE by key, as guarded; `(id, *returning)` of the rows it changed."""
    values = [x for x in w.set.values() if not isinstance(x, SearchVector)]
    values += list(w.guards.values()) + ([w.where] if w.where else [])

    def text(params: list) -> str:
        src, table = w.source, w.table
        sets = ", ".join(f"{c} = {_value(x, src, params)}" for c, x in w.set.items() if not isinstance(x, SearchVector))
        span, guard = _span_and_guard(w, lambda x: _value(x, src, params))
        back = ", ".join(f"{table}.{c}" for c in ("id", *w.returning))
        return f"UPDATE {table} SET {sets} FROM {src} WHERE {table}.id = {src}.{w.key}{span}{guard} RETURNING {back}"

    return _run(w.source, names, rows, [w.key, *_columns(values, w.source)], text)


def _on_conflict(w: Insert) -> str:
    """The INSERT's ON CONFLICT clause, as the write says (both databases read it)."""
    if w.ignore_conflicts:
        return f" ON CONFLICT ({w.conflict}) DO NOTHING" if w.conflict else " ON CONFLICT DO NOTHING"
    if w.conflict:
        # `update` may also set a column the INSERT does not write (it keeps its default on a new row).
        names = [*w.values, *(c for c in w.update if c not in w.values)]
        sets = ", ".join(f"{c} = {w.update.get(c, f'excluded.{c}')}" for c in names if c != w.conflict)
        return f" ON CONFLICT ({w.conflict}) DO UPDATE SET {sets}"
    return ""


def _insert(w: Insert, names: list[str], rows: list[tuple]) -> list[tuple]:
    """The rows' INSERT (an upsert, or ignoring conflicts, as the write says); its `returning` of each row."""
    if any(isinstance(x, SearchVector) for x in w.values.values()):
        raise ValueError(f"chain: {w.name}: a search vector is an Update's value")

    def text(params: list) -> str:
        src = w.source
        picked = ", ".join(_value(x, src, params) for x in w.values.values())
        ret = f" RETURNING {', '.join(f'{w.table}.{c}' for c in w.returning)}" if w.returning else ""
        # `WHERE true`: without a WHERE, SQLite would read the ON of ON CONFLICT as a join's.
        cols = ", ".join(w.values)
        return f"INSERT INTO {w.table} ({cols}) SELECT {picked} FROM {src} WHERE true{_on_conflict(w)}{ret}"

    return _run(w.source, names, rows, _columns(list(w.values.values()), w.source) or names[:1], text)


def _span_and_guard(w: Update, value: Callable[[Value], str]) -> tuple[str, str]:
    """An Update's WHERE after its key: the `within` span and the guards, each value as `value` renders it (in
    the order of their places in the text, so parameters it appends follow that order)."""
    span = ""
    if w.within is not None:
        column, low, high = w.within
        span = f" AND {w.table}.{column} BETWEEN {value(low)} AND {value(high)}"
    tests = [f"{w.table}.{c} = {value(x)}" for c, x in w.guards.items()]
    tests += [f"({w.where.text})"] if w.where else []
    # Found by id, only checked by the guards (params.by_key_only: the planner never scans a backlog).
    return span, (f" AND {by_key_only(' AND '.join(tests))}" if tests else "")


def _value(v: Value, source: str, params: list) -> str:
    if isinstance(v, Const):
        params.append(_adapted(v.value))
        return "%s"
    if isinstance(v, Sql):
        return v.text
    return f"{source}.{v}"


def _columns(values: Sequence[Value], source: str) -> list[str]:
    """The input columns these values read: only those are sent (a page's body is not sent to the move)."""
    out: list[str] = []
    for v in values:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Sql):
            out += re.findall(rf"\b{re.escape(source)}\.(\w+)", v.text)
    return list(dict.fromkeys(out))


def _run(
    source: str, names: list[str], rows: list[tuple], columns: list[str], text: Callable[[list], str]
) -> list[tuple]:
    """`text(params)` (which appends its constants to params) over `rows` as `source(columns) AS (VALUES …)`,
    as many rows a statement as SQLite's parameters allow; every row it returned."""
    if not rows:
        return []
    columns = list(dict.fromkeys(columns))
    at = [names.index(c) for c in columns]
    constants: list = []
    sql = text(constants)
    per = max(1, (connection.features.max_query_params - len(constants)) // len(columns))
    out: list[tuple] = []
    with connection.cursor() as cur:
        for i in range(0, len(rows), per):
            chunk = rows[i : i + per]
            marks = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(chunk))
            # The constants come after the VALUES' parameters: they are in the statement's text, after its WITH.
            params = [_adapted(row[j]) for row in chunk for j in at] + constants
            cur.execute(f"WITH {source}({', '.join(columns)}) AS (VALUES {marks}) {sql}", params)
            out += cur.fetchall()
    return out


def _index(names: list[str], rows: list[tuple], key: str, updated: set) -> None:
    """The full-text index of the rows an Update changed (SearchVector), from the input's index-form columns."""
    at = [names.index(c) for c in (key, *(f"ix_{f}" for f in fulltext.FIELDS))]
    fulltext.index_write([tuple(row[j] for j in at) for row in rows if row[at[0]] in updated])


def _adapted(value):
    """A value as the ORM would bind it (SQLite keeps datetimes as naive UTC text)."""
    return connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value


def _first(writes: Sequence[Update | Insert], name: str) -> str:
    """The first RETURNING column of the write `name`: what `after` matches the input column against."""
    for w in writes:
        if w.name == name:
            if not w.returning:
                raise ValueError(f"chain: {name} returns nothing to be after")
            return w.returning[0]
    raise ValueError(f"chain: no write named {name}")
