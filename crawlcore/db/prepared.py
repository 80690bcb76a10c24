"""Server-side prepared statements for the crawl's few big, fixed-shape writes (PostgreSQL only).

The load and extract agents send the same handful of statements thousands of times a minute (the group
writes of crawlcore.db.chain, the new-URL insert, the intents). Sent as text, PostgreSQL parses, analyses and
plans each one afresh, a large share of its CPU in a crawl. Prepared once per connection and then
EXECUTEd, the parse and analysis happen once, and after five executions PostgreSQL keeps a generic plan when
it costs no more than the custom ones (plan_cache_mode auto).

A statement is named after its text, so each connection prepares it on first use; a reconnect (Django's
CONN_MAX_AGE, a health check) starts a new set. Prepared statements live outside transactions: one prepared
in a transaction that rolls back stays prepared. A server behind PgBouncer must run it in session mode
(docs/SCALING.md), as the advisory locks already require.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.db import connection

_NOT_PREPARABLE: set[str] = set()


def _numbered(sql: str) -> str | None:
    """The statement with its `%s` placeholders as $1, $2, …; None when it holds another `%` (a literal
    percent sign would be ambiguous)."""
    parts = sql.split("%s")
    if any("%" in part for part in parts):
        return None
    out = [parts[0]]
    for i, part in enumerate(parts[1:], start=1):
        out.append(f"${i}")
        out.append(part)
    return "".join(out)


def execute(cursor, sql: str, params: Sequence) -> None:
    """cursor.execute(sql, params), as a prepared statement of this connection (prepared on first use)."""
    name = "ca_" + hashlib.sha1(sql.encode()).hexdigest()[:20]
    raw = connection.connection
    held = getattr(connection, "_crawladmin_prepared", None)
    if held is None or held[0] is not raw:
        held = (raw, set())
        connection._crawladmin_prepared = held
    if name not in held[1]:
        numbered = None if sql in _NOT_PREPARABLE else _numbered(sql)
        if numbered is None:
            _NOT_PREPARABLE.add(sql)
            cursor.execute(sql, params)
            return
        cursor.execute(f"PREPARE {name} AS {numbered}")
        held[1].add(name)
    if params:
        cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(params))})", list(params))
    else:
        cursor.execute(f"EXECUTE {name}")
