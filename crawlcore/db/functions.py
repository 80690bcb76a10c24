"""ORM expressions whose SQL differs by database (Django picks as_sqlite on SQLite, as_sql elsewhere)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import DateTimeField, F, FloatField, Func, Value


class AgeSeconds(Func):
    """Seconds from the datetime column `field` to `now`."""

    output_field = FloatField()

    def __init__(self, now: datetime, field: str):
        super().__init__(Value(now, output_field=DateTimeField()), F(field))

    def as_sql(self, compiler, connection, **extra):  # PostgreSQL and the others with interval arithmetic
        return super().as_sql(
            compiler, connection, template="EXTRACT(EPOCH FROM (%(expressions)s))", arg_joiner=" - ", **extra
        )

    def as_sqlite(self, compiler, connection, **extra):
        return super().as_sql(
            compiler,
            connection,
            template="((julianday(%(expressions)s)) * 86400.0)",
            arg_joiner=") - julianday(",
            **extra,
        )
