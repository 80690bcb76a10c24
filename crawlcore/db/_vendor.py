"""The one question the rest of the package branches on. Private: callers outside crawlcore.db ask for an
operation (or a feature in crawlcore.db.features), never for the vendor."""

from __future__ import annotations

from django.db import connection


def is_postgres() -> bool:
    return connection.vendor == "postgresql"
