"""Several writes that depend on one another, sent as ONE statement on PostgreSQL.

A batch's rows go in once, as one array per column (`unnest`), and every write of the chain is a
data-modifying CTE over them: an UPDATE guarded as the caller says, then INSERTs limited to the rows an
earlier write returned (the events and pages of the URLs that really moved). One round trip, one
statement to parse and plan, and one transaction of its own when no atomic block is open (no BEGIN or
COMMIT to send): either every write of the chain happens or none does.

PostgreSQL only (`features.write_chains()`): callers keep a step-by-step path for SQLite beside it.
All the CTEs see the same snapshot, so no write reads another's rows except through what it RETURNS:
that is the only dependency a chain expresses (`after`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db import connection

from . import prepared
from .params import array_param, by_key_only


@dataclass(frozen=True)
class Const:
    """A value for every row (one parameter), of a PostgreSQL type."""

    value: object
    kind: str


@dataclass(frozen=True)
class Sql:
    """An SQL expression over the write's table (by its name) and its input (by the input's name), written
    in SQL that PostgreSQL reads: the one place a chain takes SQL text."""

    text: str


# A column of the write's input, a constant, or an expression.
Value = str | Const | Sql


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
    `excluded.<column>` and `<table>.<column>`) or to the new value."""

    name: str
    table: str
    values: Mapping[str, Value]
    after: tuple[str, str] | None = None
    where: str | None = None
    conflict: str | None = None
    update: Mapping[str, str] = field(default_factory=dict)
    ignore_conflicts: bool = False  # ON CONFLICT DO NOTHING (with no `conflict` column)
    returning: Sequence[str] = ()
    source: str = "v"


def chain(inputs: Mapping[str, Input], writes: Sequence[Update | Insert]) -> dict[str, list[list]]:
    """Run `writes` in order over their inputs (by name: each a CTE of that name) in one statement; what
    each write returned, by its name (a list of lists of its `returning` columns)."""
    params: list = []

    def value(v: Value, source: str) -> str:
        if isinstance(v, Const):
            params.append(v.value)
            return f"%s::{v.kind}"
        if isinstance(v, Sql):
            return v.text
        return f"{source}.{v}"

    clash = set(inputs) & {w.name for w in writes}
    if clash:
        raise ValueError(f"chain: {', '.join(sorted(clash))} names both an input and a write")
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
            sets = ", ".join(f"{c} = {value(x, src)}" for c, x in w.set.items())
            # The ids once more as one array: `id = ANY(array)` is an index condition whose row count the
            # planner knows exactly, so it probes the primary key instead of scanning a table whose
            # statistics, in a fast-growing crawl, still say it is small (hash join over a sequential scan).
            # (Parameters in the order of their places in the text: the SET values, these ids, the span, the guards.)
            given = inputs[src]
            at = [c for c, _ in given.columns].index(w.key)
            params.append(array_param([row[at] for row in given.rows], "bigint"))
            span = ""
            if w.within is not None:
                column, low, high = w.within
                span = f" AND {w.table}.{column} BETWEEN {value(low, src)} AND {value(high, src)}"
            tests = [f"{w.table}.{c} = {value(x, src)}" for c, x in w.guards.items()]
            tests += [f"({w.where.text})"] if w.where else []
            # Found by id, only checked by the guards (params.by_key_only: the planner never scans a backlog).
            guard = f" AND {by_key_only(' AND '.join(tests))}" if tests else ""
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
            conflict = " ON CONFLICT DO NOTHING" if w.ignore_conflicts else ""
            if w.conflict:
                sets = ", ".join(f"{c} = {w.update.get(c, f'excluded.{c}')}" for c in w.values if c != w.conflict)
                conflict = f" ON CONFLICT ({w.conflict}) DO UPDATE SET {sets}"
            sql = f"INSERT INTO {w.table} ({cols}) SELECT {picked} FROM {source}{where}{conflict}{ret}"
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


def _first(writes: Sequence[Update | Insert], name: str) -> str:
    """The first RETURNING column of the write `name`: what `after` matches the input column against."""
    for w in writes:
        if w.name == name:
            if not w.returning:
                raise ValueError(f"chain: {name} returns nothing to be after")
            return w.returning[0]
    raise ValueError(f"chain: no write named {name}")
