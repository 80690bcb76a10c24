"""Time-partitioned tables (PostgreSQL declarative partitioning by range of one timestamp column).

A partitioned table is a parent with no rows of its own, partitions of `span_days` days each (aligned on
whole UTC days since the epoch, named `<table>_pYYYYMMDD` after their first day) and a DEFAULT partition
that takes any row no other partition covers, so an insert never fails for lack of a partition. Retention
then drops whole partitions (a catalogue change, no dead rows, no vacuum) instead of deleting rows.

Rules the code below keeps:

* The parent's primary key is (id, <column>): PostgreSQL requires the partition key in every unique
  constraint of a partitioned table. Django still sees `id` as the primary key (ids come from one identity
  sequence, so they stay unique), and nothing may reference the table by a database foreign key (a foreign
  key needs a unique constraint on `id` alone): referencing fields use db_constraint=False.
* A range can only be attached while the DEFAULT partition holds none of its rows, so creating a partition
  first moves the DEFAULT partition's rows of that range into it (one statement), then attaches it.
* Partition maintenance takes a transaction-level advisory lock, so two beat runs never race on the
  catalogue, and a short lock_timeout, so it never queues writers behind it for long: on a timeout the
  round gives up and the next one does the work.

On other databases (SQLite, the embedded mode) tables stay plain: `is_partitioned` is false, `ensure` and
`drop_before` do nothing, and callers delete old rows as rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection as default_connection
from django.db import transaction

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LOCK_TIMEOUT = "5s"
_LOCK_KEY = "crawladmin.partitions:"
_BOUNDS = r"FROM \(''([^'']+)''\) TO \(''([^'']+)''\)"


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime | None  # None, None: the DEFAULT partition
    end: datetime | None

    @property
    def is_default(self) -> bool:
        return self.start is None


@dataclass
class Dropped:
    partitions: list[str] = field(default_factory=list)
    rows: int = 0  # rows of the dropped partitions, and old rows deleted from the DEFAULT partition


def _postgres(conn) -> bool:
    return conn.vendor == "postgresql"


def is_partitioned(table: str, *, conn=None) -> bool:
    conn = conn or default_connection
    if not _postgres(conn):
        return False
    with conn.cursor() as cur:
        cur.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cur.fetchone()
    return bool(row) and row[0] == "p"


def partitions(table: str, *, conn=None) -> list[Partition]:
    """The table's partitions, DEFAULT first, then by start."""
    conn = conn or default_connection
    if not is_partitioned(table, conn=conn):
        return []
    with conn.cursor() as cur:
        cur.execute(
            f"""SELECT c.relname, (regexp_match(pg_get_expr(c.relpartbound, c.oid), '{_BOUNDS}'))[1]::timestamptz,
                       (regexp_match(pg_get_expr(c.relpartbound, c.oid), '{_BOUNDS}'))[2]::timestamptz
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = %s::regclass""",
            [table],
        )
        rows = cur.fetchall()
    found = [Partition(name, start, end) for name, start, end in rows]
    return sorted(found, key=lambda p: (not p.is_default, p.start or EPOCH))


def span_start(at: datetime, span_days: int) -> datetime:
    """The first instant of the span that holds `at` (spans of span_days whole UTC days since the epoch)."""
    days = (at - EPOCH) // timedelta(days=1)
    return EPOCH + timedelta(days=days - days % span_days)


def _default_name(table: str) -> str:
    return f"{table}_default"


def _name(table: str, start: datetime) -> str:
    return f"{table}_p{start:%Y%m%d}"


def _missing_ranges(
    existing: list[Partition], start: datetime, end: datetime, span_days: int
) -> list[tuple[datetime, datetime]]:
    """Aligned spans covering [start, end) that no partition covers yet, each clipped so it overlaps none
    (partitions made with another span_days stay as they are)."""
    taken = sorted((p.start, p.end) for p in existing if not p.is_default)
    out, at = [], span_start(start, span_days)
    while at < end:
        lo, hi = at, span_start(at, span_days) + timedelta(days=span_days)
        for t_lo, t_hi in taken:
            if t_lo <= lo < t_hi:
                lo = t_hi  # covered up to there
            elif lo < t_lo < hi:
                hi = t_lo
        if lo < hi:
            out.append((lo, hi))
        at = max(hi, lo)
    return out


def _locked(cur) -> None:
    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [_LOCK_KEY])
    cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")


def ensure(
    table: str,
    *,
    column: str,
    start: datetime,
    end: datetime,
    span_days: int,
    adopt_from: datetime | None = None,
    conn=None,
) -> list[str]:
    """Create the partitions that [start, end) lacks, and the ones the DEFAULT partition holds rows of from
    `adopt_from` (default: `start`) on, moving those rows into them; older rows there are left to
    retention. Returns the names created. Nothing on a table that is not partitioned."""
    conn = conn or default_connection
    if not is_partitioned(table, conn=conn):
        return []
    created = []
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        _locked(cur)
        existing = partitions(table, conn=conn)
        default = next((p.name for p in existing if p.is_default), None)
        lo, hi = start, end
        if default:
            adopt = start if adopt_from is None else adopt_from
            cur.execute(f'SELECT min("{column}"), max("{column}") FROM "{default}" WHERE "{column}" >= %s', [adopt])
            dmin, dmax = cur.fetchone()
            if dmin is not None:
                lo, hi = min(lo, dmin), max(hi, dmax + timedelta(microseconds=1))
        for p_lo, p_hi in _missing_ranges(existing, lo, hi, span_days):
            if (p_lo >= end or p_hi <= start) and not _default_has(cur, default, column, p_lo, p_hi):
                continue  # outside the window asked for, and no row waiting for it
            created.append(_attach(cur, table, default, column, p_lo, p_hi))
    return created


def _default_has(cur, default: str | None, column: str, lo: datetime, hi: datetime) -> bool:
    if default is None:
        return False
    cur.execute(f'SELECT EXISTS (SELECT 1 FROM "{default}" WHERE "{column}" >= %s AND "{column}" < %s)', [lo, hi])
    return bool(cur.fetchone()[0])


def _attach(cur, table: str, default: str | None, column: str, lo: datetime, hi: datetime) -> str:
    name = _name(table, lo)
    if default is None:  # the conversion, under its own exclusive lock
        cur.execute(f'CREATE TABLE "{name}" PARTITION OF "{table}" FOR VALUES FROM (%s) TO (%s)', [lo, hi])
        return name
    # A table of its own, then ATTACH: that locks the parent only against other schema changes (CREATE TABLE
    # … PARTITION OF would stop every read and write of the checks while it waits and works), and the
    # DEFAULT partition while its rows are checked. Rows of the range that fell into the DEFAULT partition
    # move first, in one statement; the attach then finds none there, and builds the indexes.
    cur.execute(f'CREATE TABLE "{name}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
    if _default_has(cur, default, column, lo, hi):
        cur.execute(
            f'WITH moved AS (DELETE FROM "{default}" WHERE "{column}" >= %s AND "{column}" < %s RETURNING *)'
            f' INSERT INTO "{name}" SELECT * FROM moved',
            [lo, hi],
        )
    cur.execute(f'ALTER TABLE "{table}" ATTACH PARTITION "{name}" FOR VALUES FROM (%s) TO (%s)', [lo, hi])
    return name


def drop_before(table: str, *, column: str, cutoff: datetime, conn=None) -> Dropped:
    """Drop every partition whose whole range is older than `cutoff`, and delete the DEFAULT partition's rows
    older than it. A partition that straddles the cutoff is kept whole: nothing at or after the cutoff is
    ever removed, and its old rows go when it ends. Nothing on a table that is not partitioned."""
    conn = conn or default_connection
    out = Dropped()
    if not is_partitioned(table, conn=conn):
        return out
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        _locked(cur)
        for p in partitions(table, conn=conn):
            if p.is_default:
                cur.execute(f'DELETE FROM "{p.name}" WHERE "{column}" < %s', [cutoff])
                out.rows += cur.rowcount
            elif p.end <= cutoff:
                # Counted before it goes: once a day, a partition's own sequential scan, for an honest figure.
                cur.execute(f'SELECT count(*) FROM "{p.name}"')
                out.rows += cur.fetchone()[0]
                cur.execute(f'DROP TABLE "{p.name}"')
                out.partitions.append(p.name)
    return out


# --------------------------------------------------------------------------------------------------
# Conversion of a plain table (the migration), and back


def _capture(cur, table: str) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """The table's secondary index definitions, its own foreign keys, and the foreign keys pointing at it."""
    cur.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass AND NOT indisprimary",
        [table],
    )
    indexes = [re.sub(r" ON ONLY ", " ON ", row[0]) for row in cur.fetchall()]
    cur.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    own_fks = cur.fetchall()
    cur.execute(
        "SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE confrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    return indexes, own_fks, cur.fetchall()


def _rebuild(cur, table: str, *, partition_by: str | None, pk: str) -> tuple[list[str], list[tuple[str, str]], str]:
    """Move `table` aside as <table>_old and create an empty `table` with its columns, defaults, checks and
    identity sequence position (partitioned by `partition_by` when given). Returns what to restore."""
    indexes, own_fks, incoming = _capture(cur, table)
    for other, name in incoming:
        cur.execute(f'ALTER TABLE {other} DROP CONSTRAINT "{name}"')
    for name, _ in own_fks:
        cur.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    cur.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = %s::regclass AND NOT i.indisprimary",
        [table],
    )
    for (index,) in cur.fetchall():
        cur.execute(f'DROP INDEX "{index}"')
    cur.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
        [table],
    )
    for (pkey,) in cur.fetchall():
        cur.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{pkey}"')
    cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    seq = cur.fetchone()[0]
    cur.execute(f"SELECT last_value, is_called FROM {seq}")
    last, called = cur.fetchone()
    cur.execute(f'ALTER TABLE "{table}" ALTER COLUMN id DROP IDENTITY')  # frees the sequence's name
    old = f"{table}_old"
    cur.execute(f'ALTER TABLE "{table}" RENAME TO "{old}"')
    tail = f" PARTITION BY RANGE ({partition_by})" if partition_by else ""
    cur.execute(f'CREATE TABLE "{table}" (LIKE "{old}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS){tail}')
    cur.execute(f'ALTER TABLE "{table}" ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY')
    cur.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, %s)", [table, last, called])
    cur.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{table}_pkey" PRIMARY KEY ({pk})')
    return indexes, own_fks, old


def _restore(cur, table: str, old: str, indexes: list[str], own_fks: list[tuple[str, str]]) -> None:
    cur.execute(f'INSERT INTO "{table}" SELECT * FROM "{old}"')
    cur.execute(f'DROP TABLE "{old}"')
    for sql in indexes:
        cur.execute(sql)
    for name, definition in own_fks:
        cur.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
    cur.execute(f'ANALYZE "{table}"')


def partition_table(
    table: str, *, column: str, span_days: int, keep_from: datetime, now: datetime, ahead_days: int, conn
) -> list[str]:
    """Turn a plain table with rows into one partitioned by range of `column`: same columns, indexes (by
    name), checks and foreign keys, primary key (id, column), the identity sequence where it was; a DEFAULT
    partition, and partitions for every span from the first row (but not before `keep_from`: older rows go
    to the DEFAULT partition, which retention empties) to `ahead_days` after `now`. Foreign keys pointing
    at the table are dropped (they would need a unique `id` alone). The rows are copied, so this holds an
    exclusive lock on the table for as long as the copy takes. Returns the partitions created; nothing on a
    database without declarative partitioning or on a table already partitioned."""
    if not _postgres(conn) or is_partitioned(table, conn=conn):
        return []
    with conn.cursor() as cur:
        cur.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
        cur.execute(f'SELECT min("{column}") FROM "{table}"')
        first = cur.fetchone()[0]
        indexes, own_fks, old = _rebuild(cur, table, partition_by=f'"{column}"', pk=f'id, "{column}"')
        cur.execute(f'CREATE TABLE "{_default_name(table)}" PARTITION OF "{table}" DEFAULT')
        start = max(first, keep_from) if first else now
        end = span_start(now, span_days) + timedelta(days=span_days + ahead_days)
        made = [_attach(cur, table, None, column, lo, hi) for lo, hi in _missing_ranges([], start, end, span_days)]
        _restore(cur, table, old, indexes, own_fks)
    return made


def unpartition_table(table: str, *, conn) -> None:
    """The reverse of partition_table: one plain table again, primary key `id`, every row kept."""
    if not is_partitioned(table, conn=conn):
        return
    with conn.cursor() as cur:
        cur.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
        indexes, own_fks, old = _rebuild(cur, table, partition_by=None, pk="id")
        _restore(cur, table, old, indexes, own_fks)
