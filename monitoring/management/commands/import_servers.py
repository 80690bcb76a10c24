"""`python manage.py import_servers servers.csv`: put a list of servers under monitoring.

Columns: host or URL, group, crawler number, check interval (s), delay threshold (s), accepted codes,
owner e-mail (gets the server's alerts), owner name (the link reports address the owner by it);
an optional header line; lines starting with '#' are comments. Every row is validated: the bad ones are
reported by line number, the good ones imported (exit status 1 when any row was bad). Idempotent:
importing the same file again changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys

from django.core.management.base import BaseCommand, CommandError

from monitoring.server_list import COLUMNS, RowError, ServerRow, is_header, parse_server_row
from monitoring.services.servers import servers_import

Bad = list[tuple[int, str]]


NOT_UTF8 = "not UTF-8 text (save the list as UTF-8)"


def read_rows(lines) -> tuple[list[ServerRow], Bad]:
    """Parse a server list; returns the good rows and (line number, error) of the bad ones. Any text is
    read: bytes that are not UTF-8 arrive as lone surrogates (surrogateescape) and fail their own line,
    as does a line the CSV reader refuses; the other lines are read on."""
    rows: dict[tuple, tuple[int, ServerRow]] = {}
    bad: Bad = []
    reader = csv.reader(lines)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a field over the CSV module's size limit: that record is skipped
            bad.append((reader.line_num, f"unreadable CSV: {exc}"))
            continue
        n = reader.line_num  # physical line where this record ended (a quoted field may span lines)
        if not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
            continue
        if any(_SURROGATE.search(c) for c in cells):
            bad.append((n, NOT_UTF8))
            continue
        if not rows and not bad and is_header(cells):
            continue
        try:
            row = parse_server_row(cells)
        except RowError as exc:
            bad.append((n, str(exc)))
            continue
        key = (row.scheme, row.host, row.port)
        if key in rows:
            bad.append((n, f"same server as line {rows[key][0]}"))
            continue
        rows[key] = (n, row)
    return [row for _, row in rows.values()], bad


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(binary) -> io.TextIOWrapper:
    return io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help=f"CSV file ('-' for stdin); columns: {', '.join(COLUMNS)}")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the outcome as JSON")

    def handle(self, *args, path: str, as_json: bool = False, **options) -> None:
        try:
            if path == "-":
                rows, bad = read_rows(_text(sys.stdin.buffer))
            else:
                with open(path, "rb") as f, _text(f) as text:  # closing the wrapper too: no ResourceWarning
                    rows, bad = read_rows(text)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        outcome = servers_import(rows=rows)
        if as_json:
            summary = {
                "imported": len(rows),
                "created": outcome.created,
                "updated": outcome.updated,
                "bad": [{"line": n, "error": e} for n, e in bad],
            }
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            for n, error in bad:
                self.stderr.write(f"line {n}: {error}")
            self.stdout.write(
                f"imported {len(rows)} servers ({outcome.created} new, {outcome.updated} updated); {len(bad)} bad rows"
            )
        if bad:
            sys.exit(1)
