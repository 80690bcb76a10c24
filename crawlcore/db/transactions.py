"""Settings of the current transaction that only PostgreSQL has; SQLite needs none of them (one writer,
and a transaction there already reads one snapshot)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection, transaction

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


@contextmanager
def unflushed_commits() -> Iterator[None]:
    """Within the block, on PostgreSQL, a commit returns without waiting for its WAL to reach the disk
    (synchronous_commit off, for this session until the block ends). For work that is redone when its commit
    is lost: only a crash of PostgreSQL itself loses one, and then with every later commit (the WAL is
    written in order), so what was lost is a last stretch of work, not a hole in it. Never for a write a user
    or another service was told is done."""
    if not is_postgres():
        yield
        return
    with connection.cursor() as cur:
        cur.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cur:
                cur.execute("RESET synchronous_commit")
        except DatabaseError:
            connection.close()  # a connection in an unknown state is not handed to the next task with it
