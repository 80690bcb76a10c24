"""How the crawl's bulk statements hand values to PostgreSQL: a column's type for an input, a column as one
array parameter, and a guard that only checks rows found by their key. Used by crawlcore.db.bulk and
crawlcore.db.chain (and raw's lookups); imports neither."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from django.db import connection
from django.db.models import Model


def column_types(model: type[Model], names: Sequence[str]) -> list[tuple[str, str]]:
    """`(column, PostgreSQL type)` of these fields of `model`, for chain's input. Text columns as `text`:
    a cast to varchar(n) would cut a long value silently, where the column's own limit refuses it."""
    out = []
    for name in names:
        f = model._meta.get_field(name)
        if f.get_internal_type() in ("CharField", "TextField", "SlugField", "URLField", "EmailField"):
            kind = "text"
        elif f.is_relation:
            kind = f.rel_db_type(connection)
        else:
            kind = f.db_type(connection)
        out.append((f.column, kind.split("(")[0] if kind.startswith("varchar") else kind))
    return out


_INTEGERS = frozenset({"bigint", "integer", "smallint"})
_QUOTED = frozenset({"text", "timestamptz", "timestamp with time zone", "inet", "uuid"})


def array_param(values: list, kind: str) -> str | list:
    """One input column as a single parameter in PostgreSQL's array text form ('{1,2,NULL}', '{"a","b"}'),
    read by array_in: a Python list would become ARRAY[$1, $2, …], one literal per value for the driver to
    adapt and for PostgreSQL to parse and plan, a large share of the extract worker's time and some of
    the server's at hundreds of links a batch. Columns of other types (bytea), and values of a type the
    column does not expect, keep the list form; a NUL in a text still makes the driver refuse the value."""
    fast = _array_fast(values, kind)
    if fast is not None:
        return fast
    out = []
    try:
        if kind in _INTEGERS:
            for v in values:
                out.append("NULL" if v is None else str(int(v)) if type(v) is int else _unexpected())
        elif kind == "boolean":
            for v in values:
                out.append("NULL" if v is None else ("t" if v else "f") if type(v) is bool else _unexpected())
        elif kind == "double precision":
            for v in values:
                if v is None:
                    out.append("NULL")
                elif type(v) in (float, int) and math.isfinite(v):
                    out.append(repr(float(v)))
                else:
                    _unexpected()
        elif kind in _QUOTED:
            last, last_text = None, ""  # a column of one time (a batch's `now`) is written out once
            for v in values:
                if v is None:
                    out.append("NULL")
                    continue
                if v is last:
                    out.append(last_text)
                    continue
                text = v.isoformat() if isinstance(v, datetime) else v if type(v) is str else _unexpected()
                out.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
                last, last_text = v, out[-1]
        else:
            return values
    except _Unexpected:
        return values
    return "{" + ",".join(out) + "}"


def _array_fast(values: list, kind: str) -> str | None:
    """array_param's common case in a few C-level joins: every value an int of an integer column, or a str
    with no quote or backslash of a text column (a URL, an anchor text). None when a value needs the
    per-value path. The extract agent sends some twenty such columns a batch, hundreds of values each."""
    if kind in _INTEGERS:
        if not values or set(map(type, values)) == {int}:
            return "{" + ",".join(map(str, values)) + "}"
    elif kind == "text" and values:
        try:
            joined = '","'.join(values)  # TypeError unless every value is a str (None, a datetime: slow path)
        except TypeError:
            return None
        # Only the separators' quotes: no value holds a quote, so none needs escaping.
        if joined.count('"') == 2 * (len(values) - 1) and "\\" not in joined:
            return '{"' + joined + '"}'
    return None


class _Unexpected(Exception):
    pass


def _unexpected():
    raise _Unexpected


def by_key_only(condition: str) -> str:
    """A guard of an UPDATE by primary key, written so that no index can serve it: `(condition) IS TRUE`.

    The rows of such an UPDATE are found by their ids, and the guard only checks them. Written plainly, a
    guard like `state = 'init'` or `extracted_at IS NULL` matches an index of its own (url_due_idx, the
    partial page_unextracted_idx), and while a crawl grows a table faster than autovacuum analyses it the
    planner believes that index holds a handful of rows, scans it, and joins the ids against every row of
    the backlog, a cost that grows with the frontier. `IS TRUE` is the same
    test (a guard over NULL is not true either way) in a form the planner cannot match to an index."""
    return f"({condition}) IS TRUE"
