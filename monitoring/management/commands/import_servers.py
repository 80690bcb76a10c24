"""`python manage.py import_servers servers.csv`: put a list of servers under monitoring.

Columns: host or URL, group, crawler number, check interval (s), delay threshold (s), accepted codes;
an optional header line; lines starting with '#' are comments. Every row is validated: the bad ones are
reported by line number, the good ones imported (exit status 1 when any row was bad). Idempotent:
importing the same file again changes nothing.
"""

from __future__ import annotations

import csv
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from monitoring.server_list import COLUMNS, RowError, ServerRow, is_header, parse_server_row
from monitoring.services.servers import servers_import

Bad = list[tuple[int, str]]


def read_rows(lines) -> tuple[list[ServerRow], Bad]:
    """Parse a server list; returns the good rows and (line number, error) of the bad ones."""
    rows: dict[tuple, tuple[int, ServerRow]] = {}
    bad: Bad = []
    reader = csv.reader(lines)
    for cells in reader:
        n = reader.line_num  # physical line where this record ended (a quoted field may span lines)
        if not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
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


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help=f"CSV file ('-' for stdin); columns: {', '.join(COLUMNS)}")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the outcome as JSON")

    def handle(self, *args, path: str, as_json: bool = False, **options) -> None:
        try:
            if path == "-":
                rows, bad = read_rows(sys.stdin)
            else:
                with open(path, newline="", encoding="utf-8-sig") as f:
                    rows, bad = read_rows(f)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CommandError(f"{path} is not a readable CSV file: {exc}") from None
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
