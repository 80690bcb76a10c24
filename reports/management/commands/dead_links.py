"""`python manage.py dead_links [--site HOST] [--group G] [--since DATE] [--format csv|json] [-o FILE]`:
the broken links of the crawl, for the people who fix them. Brings the record up to date with
the crawl first, then streams: a site with 100,000 broken links exports in bounded memory."""

from __future__ import annotations

import sys
from datetime import datetime, time

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from crawlcore.schema import SchemaOutdated, schema_ensure
from crawlcore.server_filter import filter_problem
from reports.export import FORMATS, dead_links_export
from reports.selectors import SORTS
from reports.services import link_breaks_refresh


def _since(value: str) -> datetime:
    """A date (midnight, local time) or a date and time (ISO 8601)."""
    parsed = parse_datetime(value)
    if parsed is None:
        day = parse_date(value)
        if day is None:
            raise CommandError(f"--since {value!r}: expected a date (2026-01-31) or an ISO date and time")
        parsed = datetime.combine(day, time.min)
    return timezone.make_aware(parsed) if timezone.is_naive(parsed) else parsed


class Command(BaseCommand):
    help = "Export the crawl's broken links (CSV or JSON), by site, source page and target."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--site", default="", help="Only this site: host, host:port or origin (http://127.0.0.11:8090)"
        )
        parser.add_argument("--group", default="", help="Only sites of this server group")
        parser.add_argument("--since", default=None, help="Only links first seen broken on or after this date")
        parser.add_argument("--format", choices=FORMATS, default="csv", help="the output format")
        parser.add_argument(
            "--sort", choices=SORTS, default="site",
            help="site: by site, page, target; impact: the links on the most-reached pages first (column impact)",
        )  # fmt: skip
        parser.add_argument("-o", "--output", default="-", help="File to write (default: standard output)")
        parser.add_argument(
            "--no-refresh", action="store_true", help="Export the record as it is, without checking the crawl"
        )

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        problem = filter_problem(site=opts["site"], group=opts["group"])
        if problem:
            raise CommandError(problem)
        since = _since(opts["since"]) if opts["since"] else None
        if not opts["no_refresh"]:
            link_breaks_refresh()
        chunks = dead_links_export(
            fmt=opts["format"], site=opts["site"], group=opts["group"], since=since, sort=opts["sort"]
        )
        if opts["output"] == "-":
            for chunk in chunks:
                sys.stdout.write(chunk)
            sys.stdout.flush()
            return
        # newline="": the csv module writes its own line ends.
        with open(opts["output"], "w", encoding="utf-8", newline="") as out:
            for chunk in chunks:
                out.write(chunk)
