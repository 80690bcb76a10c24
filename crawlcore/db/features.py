"""What the database can do, for callers whose fast path is domain SQL of their own (a claim, a chart's
JSON) with a portable path beside it. Named after the capability, as Django's connection.features are, so
a caller reads as "if one statement can do it" rather than "if PostgreSQL"."""

from __future__ import annotations

from ._vendor import is_postgres


def skip_locked_claims() -> bool:
    """`UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING …` works: a claim is one statement
    that never waits on another claimer (PostgreSQL). Elsewhere: select, guarded update, read back."""
    return is_postgres()


def json_aggregates() -> bool:
    """`json_agg(… ORDER BY …)` and numeric `round(x, n)` exist: a series can leave the database as finished
    JSON text (PostgreSQL). Elsewhere the series is built and encoded in Python."""
    return is_postgres()


def write_chains() -> bool:
    """Data-modifying CTEs over `unnest`ed arrays (crawlcore.db.chain): a batch's dependent writes — guarded
    moves, then the rows of what moved — in one statement (PostgreSQL). Elsewhere one statement per write."""
    return is_postgres()


def long_in_lists() -> bool:
    """An `IN (…)` list may hold thousands of values and still be planned as one index or hash lookup
    (PostgreSQL). Elsewhere (SQLite) a statement binds a few hundred values at most."""
    return is_postgres()
