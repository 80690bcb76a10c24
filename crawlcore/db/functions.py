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


class JsonArrayFloat(Func):
    """Element `index` of the JSON array in column `field`, as a float; NULL when the array or that element
    is missing."""

    output_field = FloatField()

    def __init__(self, field: str, index: int):
        self.index = int(index)  # formatted into the SQL: an int, never text
        super().__init__(F(field))

    def as_sql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"(({sql}) ->> {self.index})::double precision", params

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"CAST(json_extract({sql}, '$[{self.index}]') AS REAL)", params


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HTTP_DATE_RE = (
    "^[A-Z][a-z]{2}, [0-3][0-9] (" + "|".join(_MONTHS) + ") [1-9][0-9]{3} [0-2][0-9]:[0-5][0-9]:[0-6][0-9] GMT$"
)


class HttpDateAgeSeconds(Func):
    """Seconds from the HTTP date (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT") in the text column
    `field` to `now`; NULL when the text is not such a date. Built from the date's parts with arithmetic
    that cannot fail: a server's malformed or impossible date ("31 Feb") must not break the query."""

    output_field = FloatField()

    def __init__(self, now: datetime, field: str):
        self.now_epoch = float(now.timestamp())  # formatted into the SQL: a float, never text
        super().__init__(F(field))

    def _column(self, compiler) -> str:
        sql, params = compiler.compile(self.source_expressions[0])
        if params:
            raise ValueError("HttpDateAgeSeconds takes a column")
        return f"({sql})"

    def as_sql(self, compiler, connection, **extra):  # PostgreSQL
        v = self._column(compiler)
        month = f"CASE substr({v}, 9, 3) " + " ".join(f"WHEN '{m}' THEN {i}" for i, m in enumerate(_MONTHS, 1))
        epoch = (
            f"EXTRACT(EPOCH FROM make_date(substr({v}, 13, 4)::int, {month} END, 1)::timestamp)"
            f" + (substr({v}, 6, 2)::int - 1) * 86400 + substr({v}, 18, 2)::int * 3600"
            f" + substr({v}, 21, 2)::int * 60 + substr({v}, 24, 2)::int"
        )
        return f"(CASE WHEN {v} ~ '{_HTTP_DATE_RE}' THEN {self.now_epoch!r} - ({epoch}) END)", []

    def as_sqlite(self, compiler, connection, **extra):
        v = self._column(compiler)
        month = f"CASE substr({v}, 9, 3) " + " ".join(f"WHEN '{m}' THEN '{i:02d}'" for i, m in enumerate(_MONTHS, 1))
        month += " END"
        epoch = (
            f"(julianday(substr({v}, 13, 4) || '-' || ({month}) || '-01') - 2440587.5) * 86400.0"
            f" + (CAST(substr({v}, 6, 2) AS INTEGER) - 1) * 86400 + CAST(substr({v}, 18, 2) AS INTEGER) * 3600"
            f" + CAST(substr({v}, 21, 2) AS INTEGER) * 60 + CAST(substr({v}, 24, 2) AS INTEGER)"
        )
        shaped = f"length({v}) = 29 AND substr({v}, 27, 3) = 'GMT' AND ({month}) IS NOT NULL"
        return f"(CASE WHEN {shaped} THEN {self.now_epoch!r} - ({epoch}) END)", []
