"""Advisory locks: one context manager, and every key namespace of the cluster in one table.

On PostgreSQL a lock is pg_advisory_lock's, held across processes and machines: a session lock dies with
its connection (a killed worker never leaves one held), a transaction lock with its transaction. Keys of
different namespaces never collide: each namespace has its own key form below. On SQLite (the embedded
mode: one process) a namespace is either always granted, when one process cannot race itself there, or a
lock of this process, when the embedded runner's threads can.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

from django.db import DatabaseError, connection

from ._vendor import is_postgres

FOREVER = math.inf  # wait for as long as it takes (one blocking statement on PostgreSQL)
_POLL = 0.05  # seconds between two tries of a session lock waited for with a bound


class Scope(Enum):
    SESSION = "session"  # given back on leaving the block (or when the connection closes)
    TRANSACTION = "transaction"  # given back at commit or rollback: enter it inside transaction.atomic()


class Embedded(Enum):
    GRANTED = "granted"  # SQLite: always taken
    PROCESS = "process"  # SQLite: a threading lock per key, in this process


@dataclass(frozen=True)
class Namespace:
    """The key form of one kind of lock: `pair` locks (pair, key) with pg_advisory_lock(int4, int4);
    `bigint` is one constant int8 key; `text` locks hashtext(text + key)."""

    scope: Scope
    embedded: Embedded
    pair: int | None = None
    bigint: int | None = None
    text: str | None = None

    def sql_args(self, key: int | str | None) -> tuple[str, list]:
        if self.pair is not None:
            return "%s, %s", [self.pair, key]
        if self.bigint is not None:
            return "%s", [self.bigint]
        return "hashtext(%s)", [f"{self.text}{key}"]


NAMESPACES: dict[str, Namespace] = {
    # One robots.txt fetch per server at a time (crawlcore.services.servers): "rb", then the server id.
    # Not a transaction lock: the fetch commits its status check on its own.
    "robots": Namespace(Scope.SESSION, Embedded.GRANTED, pair=0x7262),
    # One ranking run at a time (ranking.services): "rank" in ASCII. Embedded: one process, and each run's
    # write is one transaction, so the last one wins whole.
    "rank": Namespace(Scope.SESSION, Embedded.GRANTED, bigint=0x72616E6B),
    # One computation of each dashboard rollup at a time (dashboard.rollups), keyed by the rollup's name.
    # Embedded: the web threads and the runner's beat share one process.
    "dashboard": Namespace(Scope.TRANSACTION, Embedded.PROCESS, text="crawladmin.dashboard:"),
}


@contextmanager
def advisory_lock(namespace: str, key: int | str | None = None, *, wait: float = 0.0) -> Iterator[bool]:
    """Take the lock `key` of `namespace`, trying for up to `wait` seconds (0: once; FOREVER: block).
    Yields whether it was taken; the block runs either way, and decides what to do without it."""
    ns = NAMESPACES[namespace]
    if not is_postgres():
        with _process_lock(ns, namespace, key, wait) as taken:
            yield taken
        return
    args, params = ns.sql_args(key)
    xact = "_xact" if ns.scope is Scope.TRANSACTION else ""
    with connection.cursor() as cur:
        if wait == FOREVER:
            cur.execute(f"SELECT pg_advisory{xact}_lock({args})", params)
            taken = True
        else:
            deadline = time.monotonic() + wait
            while True:
                cur.execute(f"SELECT pg_try_advisory{xact}_lock({args})", params)
                taken = bool(cur.fetchone()[0])
                if taken or time.monotonic() >= deadline:
                    break
                time.sleep(_POLL)
    try:
        yield taken
    finally:
        if taken and ns.scope is Scope.SESSION:
            try:
                with connection.cursor() as cur:
                    cur.execute(f"SELECT pg_advisory_unlock({args})", params)
            except DatabaseError:
                # A session lock dies with its session: closing this thread's connection gives it back.
                connection.close()


@contextmanager
def _process_lock(ns: Namespace, namespace: str, key: int | str | None, wait: float) -> Iterator[bool]:
    if ns.embedded is Embedded.GRANTED:
        yield True
        return
    with _guard:
        lock = _process_locks.setdefault((namespace, key), threading.Lock())
    if wait == FOREVER:
        taken = lock.acquire()
    elif wait <= 0:
        taken = lock.acquire(blocking=False)
    else:
        taken = lock.acquire(timeout=wait)
    try:
        yield taken
    finally:
        if taken:
            lock.release()


_guard = threading.Lock()
_process_locks: dict[tuple[str, int | str | None], threading.Lock] = {}
