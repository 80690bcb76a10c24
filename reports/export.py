"""The dead-link export as text, streamed: `manage.py dead_links` and the dashboard's download button write
the same chunks. CSV columns in EXPORT_COLUMNS' order (a contract); anchor text and every other cell
written as data, never as a spreadsheet formula."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from crawler.brokenlinks import neutralised

from .selectors import EXPORT_COLUMNS, IMPACT, dead_links_export_rows

FORMATS = ("csv", "json")
_ROWS_PER_CHUNK = 200


def dead_links_export(*, fmt: str = "csv", **filters) -> Iterator[str]:
    """Text chunks of the export (a few hundred rows each), in bounded memory however many rows."""
    rows = dead_links_export_rows(**filters)
    columns = (*EXPORT_COLUMNS, IMPACT) if filters.get("sort") == IMPACT else EXPORT_COLUMNS
    return _csv(rows, columns) if fmt == "csv" else _json(rows)


def _csv(rows: Iterator[dict], columns: tuple[str, ...] = EXPORT_COLUMNS) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for n, row in enumerate(rows, 1):
        writer.writerow([neutralised(v) if isinstance(v, str) else ("" if v is None else v) for v in row.values()])
        if n % _ROWS_PER_CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _json(rows: Iterator[dict]) -> Iterator[str]:
    # One JSON array, written as it goes: "[", the rows separated by commas, "]".
    yield "["
    for n, row in enumerate(rows):
        yield ("," if n else "") + "\n" + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"
