"""What the database can do, for callers whose fast path is domain SQL of their own (a chart's JSON, a
report's long lookups) with a portable path beside it. Named after the capability, as Django's
connection.features are, so a caller reads as "if one statement can do it" rather than "if PostgreSQL"."""

from __future__ import annotations

from ._vendor import is_postgres


def json_aggregates() -> bool:
    """`json_agg(… ORDER BY …)` and numeric `round(x, n)` exist: a series can leave the database as finished
    JSON text (PostgreSQL). Elsewhere the series is built and encoded in Python."""
    return is_postgres()


def long_in_lists() -> bool:
    """An `IN (…)` list may hold thousands of values and still be planned as one index or hash lookup
    (PostgreSQL). Elsewhere (SQLite) a statement binds a few hundred values at most."""
    return is_postgres()
