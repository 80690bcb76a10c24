"""`python manage.py import_servers servers.csv`: put a list of servers under monitoring.

Columns: host or URL, group, crawler number, check interval (s), delay threshold (s), accepted codes,
owner e-mail (gets the server's alerts), owner name (the link reports address the owner by it);
an optional header line; lines starting with '#' are comments. Every line is read on its own (a quote
opened and not closed spoils that line only) and validated: the bad ones are reported by line number
with the reason, the good ones imported (exit status 1 when any line was bad). Idempotent: importing
the same file again changes nothing. --trusted makes the servers trusted (no private-address guard,
content checks allowed); without it new servers are untrusted and listed ones keep their trust.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Iterator
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError

from monitoring.server_list import COLUMNS, RowError, ServerRow, is_header, parse_server_row
from monitoring.services.servers import servers_import

Bad = list[tuple[int, str]]


NOT_UTF8 = "not UTF-8 text (save the list as UTF-8)"


MAX_LINE_CHARS = 65536  # a server line is a few hundred characters; a longer one is reported, not held


def _physical_lines(lines: TextIO) -> Iterator[tuple[int, str | None]]:
    """(line number, text without its line end) of each physical line; None for a line over MAX_LINE_CHARS,
    whose rest is read past in bounded pieces. Any line end (LF, CRLF, CR) ends a line."""
    n = 0
    while chunk := lines.readline(MAX_LINE_CHARS + 1):
        n += 1
        if len(chunk) > MAX_LINE_CHARS and not chunk.endswith(("\n", "\r")):
            while chunk and not chunk.endswith(("\n", "\r")):
                chunk = lines.readline(MAX_LINE_CHARS + 1)
            yield n, None
            continue
        yield n, chunk.rstrip("\r\n")


def _cells(text: str) -> list[str]:
    """One line as CSV fields. Strict: a quote opened and not closed, or text after a closing quote, is an
    error of this line only; a server list has no field that spans lines, so the next line starts afresh."""
    return next(csv.reader([text], strict=True), [])


def read_rows(lines: TextIO) -> tuple[list[ServerRow], Bad]:
    """Parse a server list; returns the good rows and (line number, error) of the bad ones. Any text is
    read, line by line: bytes that are not UTF-8 arrive as lone surrogates (surrogateescape) and fail their
    own line, as does a line the CSV reader refuses (a stray quote included); the other lines are read on."""
    rows: dict[tuple, tuple[int, ServerRow]] = {}
    bad: Bad = []
    for n, text in _physical_lines(lines):
        if text is None:
            bad.append((n, f"unreadable line: longer than {MAX_LINE_CHARS} characters"))
            continue
        try:
            cells = _cells(text)
        except csv.Error as exc:
            bad.append((n, f"unreadable CSV: {_csv_reason(str(exc))}"))
            continue
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


def _csv_reason(text: str) -> str:
    if "unexpected end of data" in text:
        return "a quote is opened and not closed on this line"
    if "expected" in text and "after" in text:  # e.g. "',' expected after '\"'"
        return "text after a closing quote (a quote inside a field must be doubled)"
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(binary) -> io.TextIOWrapper:
    return io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help=f"CSV file ('-' for stdin); columns: {', '.join(COLUMNS)}")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the outcome as JSON")
        parser.add_argument(
            "--trusted",
            action="store_true",
            help="trust these servers: fetched without the private-address guard (CRAWL_ALLOW_PRIVATE), content "
            "checks allowed; without it new servers are untrusted and listed ones keep their trust",
        )

    def handle(self, *args, path: str, as_json: bool = False, trusted: bool = False, **options) -> None:
        try:
            if path == "-":
                rows, bad = read_rows(_text(sys.stdin.buffer))
            else:
                with open(path, "rb") as f, _text(f) as text:  # closing the wrapper too: no ResourceWarning
                    rows, bad = read_rows(text)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        outcome = servers_import(rows=rows, trusted=trusted)
        if as_json:
            summary = {
                "imported": len(rows),
                "created": outcome.created,
                "updated": outcome.updated,
                "trusted": trusted,
                "bad": [{"line": n, "error": e} for n, e in bad],
            }
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            for n, error in bad:
                self.stderr.write(f"line {n}: {error}")
            self.stdout.write(
                f"imported {_n(len(rows), 'server')} ({outcome.created} new, {outcome.updated} updated); "
                f"{_n(len(bad), 'bad row')}"
            )
            self.stdout.write(
                "trusted: fetched without the private-address guard, content checks allowed"
                if trusted
                else "not trusted: new servers are fetched with the private-address guard (--trusted to trust them)"
            )
        if bad:
            sys.exit(1)
