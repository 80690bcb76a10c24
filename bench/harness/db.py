"""What the database benchmarks share: a fresh PostgreSQL database, `manage.py` in it, and bulk
loading with COPY into tables whose Python-side defaults PostgreSQL does not know."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

# The fresh database is the cluster harness's (testweb.cluster), shared with the integration tests.
from testweb.cluster import fresh_database

__all__ = ["ROOT", "copy_lines", "fill_defaults", "fresh_database", "manage"]

ROOT = Path(__file__).resolve().parents[2]


def manage(env: dict, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc


def fill_defaults(cur, table: str, given: set[str]) -> None:
    """A database default for every NOT NULL column we do not load (Django keeps defaults in Python), so
    a COPY survives columns added to the models since the benchmark was written."""
    cur.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s"
        " AND is_nullable = 'NO' AND column_default IS NULL",
        [table],
    )
    for column, kind in cur.fetchall():
        if column in given:
            continue
        if "char" in kind or kind == "text":
            value = "''"
        elif kind == "boolean":
            value = "false"
        elif kind.startswith("timestamp"):
            value = "now()"
        elif kind == "bytea":
            value = "'\\x'::bytea"
        else:
            value = "0"
        cur.execute(f'ALTER TABLE {table} ALTER COLUMN "{column}" SET DEFAULT {value}')


COPY_CHUNK = 200_000  # lines per COPY: a few tens of MB of text at a time, not the whole table


def copy_lines(cur, sql: str, lines) -> None:
    """Stream text lines (each ending in a newline) into `COPY … FROM STDIN`, COPY_CHUNK at a time."""
    buf, n = io.StringIO(), 0
    for line in lines:
        buf.write(line)
        n += 1
        if n % COPY_CHUNK == 0:
            buf.seek(0)
            cur.copy_expert(sql, buf)
            buf = io.StringIO()
    buf.seek(0)
    cur.copy_expert(sql, buf)
