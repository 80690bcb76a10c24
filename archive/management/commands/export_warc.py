"""`python manage.py export_warc OUT.warc.gz [--site HOST] [--group G] [--since DATE | --since-export PREV.cdxj]
[--dedup-cdxj PREV.cdxj] [--crawl-log] [--max-size SIZE] [--incidents]`: the stored pages and every other answer
the crawl kept as WARC/1.1 (archive.services.warc_export), a CDXJ index beside it (OUT.cdxj), a progress bar on
stderr. `--incidents`: only incidents' evidence (the monitor's failing answers) with the last good captures of
their URLs.

A rolling archive: the first export whole, each next one `--since-export` the previous one's index: only
what was fetched since it, payloads it already holds written as revisits."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_date, parse_datetime
from tqdm import tqdm

from archive.dedup import NotAnIndex, PayloadIndex
from archive.selectors import ExportScope, incidents_scope
from archive.services import warc_export
from crawlcore.server_filter import filter_problem, servers_named

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
MIN_SIZE = 1024 * 1024  # smaller rolls over every page or two: surely a typo


def _host(site: str) -> str:
    """The host of the server a --site names (the export's scope is by host)."""
    return servers_named(site).values_list("host", flat=True).first() or site


def parse_size(text: str) -> int:
    """'500M', '1G', '1.5GB', '1048576' -> bytes (binary units)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise CommandError(f"--max-size {text!r}: a size like 1048576, 500M or 1G")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < MIN_SIZE:
        raise CommandError(f"--max-size {text!r}: at least 1M")
    return size


def parse_since(text: str) -> datetime:
    """A date (midnight UTC) or an ISO date-time (UTC when it names no zone)."""
    try:
        moment = parse_datetime(text)
        if moment is None:
            day = parse_date(text)
            moment = datetime(day.year, day.month, day.day) if day else None
    except ValueError:
        moment = None
    if moment is None:
        raise CommandError(f"--since {text!r}: a date (2026-11-26) or a date-time (2026-11-26T08:00:00+01:00)")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_earlier_index(*paths: Path) -> PayloadIndex:
    for path in paths:
        if not path.is_file():
            raise CommandError(f"{path}: no such file (the .cdxj index written beside an earlier export)")
    try:
        return PayloadIndex.from_cdxj(*paths)
    except NotAnIndex as exc:
        raise CommandError(str(exc)) from exc


class Command(BaseCommand):
    help = "Export the stored pages as WARC/1.1 with a CDXJ index (request, response, revisit, metadata records)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", help="OUT.warc.gz; the index is written beside it as OUT.cdxj")
        parser.add_argument("--site", help="only this server: host, host:port or origin (http://127.0.0.11:8090)")
        parser.add_argument("--group", help="only servers of this group")
        parser.add_argument("--since", type=str, help="only what was fetched or revisited since this date (UTC)")
        parser.add_argument(
            "--dedup-cdxj",
            type=str,
            action="append",
            default=[],
            metavar="FILE.cdxj",
            help="an earlier export's index (or a pywb collection's): payloads it holds are written as revisit "
            "records; may be given more than once",
        )
        parser.add_argument(
            "--since-export",
            type=str,
            metavar="FILE.cdxj",
            help="the index of the previous export of a rolling archive: --since its newest record, --dedup-cdxj it",
        )
        parser.add_argument(
            "--crawl-log", action="store_true", help="add the crawl log (every status check) as a resource record"
        )
        parser.add_argument("--max-size", type=str, help="roll over to OUT-00001.warc.gz, … at this size (500M, 1G)")
        parser.add_argument(
            "--incidents",
            action="store_true",
            help="only incidents' evidence (what the server answered when an outage was confirmed) and the last "
            "good capture of each of their URLs",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(self, *args, **options) -> None:
        out = Path(options["out"])
        if not out.name.endswith(".warc.gz"):
            raise CommandError(f"{out}: the name must end in .warc.gz (each record is gzipped on its own)")
        if not out.parent.is_dir():
            raise CommandError(f"{out.parent}: no such directory")
        since = parse_since(options["since"]) if options["since"] else None
        dedup = None
        if options["since_export"]:
            if since is not None:
                raise CommandError("--since-export FILE takes its date from FILE: give --since or --since-export")
            previous = read_earlier_index(Path(options["since_export"]))
            if previous.latest is None:
                raise CommandError(f"{options['since_export']}: an empty index has no date to start from; use --since")
            since = previous.latest
        earlier = [options["since_export"]] * bool(options["since_export"]) + options["dedup_cdxj"]
        if earlier:
            dedup = read_earlier_index(*(Path(p) for p in earlier))
        problem = filter_problem(site=options["site"] or "", group=options["group"] or "")
        if problem:
            raise CommandError(problem)
        site = _host(options["site"]) if options["site"] else None
        scope = ExportScope(site=site, group=options["group"] or None, since=since)
        if options["incidents"]:
            scope = incidents_scope(scope)
        max_size = parse_size(options["max_size"]) if options["max_size"] else None
        with tqdm(unit="page", disable=options["no_progress"], dynamic_ncols=True) as bar:
            summary = warc_export(
                out=out,
                scope=scope,
                max_size=max_size,
                dedup=dedup,
                crawl_log=options["crawl_log"],
                on_total=lambda n: setattr(bar, "total", n),
                on_pages=bar.update,
            )
        names = ", ".join(str(p) for p in summary.files)
        self.stdout.write(
            f"{summary.pages} pages, {summary.exchanges} other answers, {summary.records} records "
            f"({summary.deduplicated} revisits of a payload archived before), {summary.bytes} bytes in {names}; "
            f"index {summary.index}"
        )
