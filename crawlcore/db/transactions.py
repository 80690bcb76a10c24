"""Settings of the current transaction that only PostgreSQL has; SQLite needs none of them (one writer,
and a transaction there already reads one snapshot)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from ._vendor import is_postgres


@contextmanager
def read_snapshot() -> Iterator[None]:
    """A transaction whose reads all see one snapshot (REPEATABLE READ READ ONLY on PostgreSQL), so reads
    of several tables agree: no link to a URL inserted between two of them. Inside a caller's transaction
    the isolation level can no longer be set: the reads join that transaction as it is."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if is_postgres() and outermost:
            with connection.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def gently() -> None:
    """For the rest of this transaction (SET LOCAL), on PostgreSQL: a count over millions of rows should
    not take every core from the pages being served meanwhile, so one process and no JIT compilation
    (which costs more than it saves on these plain scans)."""
    if is_postgres():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            cursor.execute("SET LOCAL jit = off")
