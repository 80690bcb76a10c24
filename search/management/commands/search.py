"""`python manage.py search QUERY [--site S] [--group G] [--language L] [--type T] [--since D] [--until D]
[--limit N] [--json]`: the stored pages matching every word of QUERY, best first (text relevance combined
with the page's BlockRank: crawler.fulltext.score). With --json: {"query", "results": [{url, title, score,
...}]} in rank order."""

from __future__ import annotations

import html
import json
from datetime import datetime, time

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import strip_tags

from crawlcore.schema import SchemaOutdated, schema_ensure
from search.selectors import MAX_LIMIT, Filters, SearchError, search_pages


def _when(option: str, value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        day = parse_date(value)
        if day is None:
            raise CommandError(f"{option} {value!r}: expected a date (2026-01-31) or an ISO date and time")
        parsed = datetime.combine(day, time.min)
    return timezone.make_aware(parsed) if timezone.is_naive(parsed) else parsed


class Command(BaseCommand):
    help = "Search the crawl's stored pages (HTML and PDF), ranked by text relevance and BlockRank."

    def add_arguments(self, parser) -> None:
        parser.add_argument("query", help="Words to find (all of them); Korean and Japanese words too")
        parser.add_argument("--site", default="", help="Only this site (host, or host:port)")
        parser.add_argument("--group", default="", help="Only sites of this server group")
        parser.add_argument("--language", default="", help="Only pages the analyzer found in this language (ko, en…)")
        parser.add_argument("--type", default="", help="Only this content type: pdf, html, or a media type")
        parser.add_argument("--since", default=None, help="Only pages fetched on or after this date")
        parser.add_argument("--until", default=None, help="Only pages fetched before this date")
        parser.add_argument("--limit", type=int, default=20, help=f"Hits to show (1-{MAX_LIMIT}, default 20)")
        parser.add_argument("--json", action="store_true", help="One JSON object: {query, results: [...]}")

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        filters = Filters(
            site=opts["site"], group=opts["group"], language=opts["language"], content_type=opts["type"],
            since=_when("--since", opts["since"]), until=_when("--until", opts["until"]),
        )  # fmt: skip
        try:
            hits = search_pages(query=opts["query"], filters=filters, limit=opts["limit"])
        except SearchError as exc:
            raise CommandError(str(exc)) from None
        if opts["json"]:
            out = {"query": opts["query"], "results": [h.as_json() for h in hits]}
            self.stdout.write(json.dumps(out, ensure_ascii=False))
            return
        if not hits:
            self.stdout.write("no page matches")
            return
        for n, hit in enumerate(hits, 1):
            self.stdout.write(f"{n:>3}. {hit.score:.4f}  {hit.url}")
            if hit.title:
                self.stdout.write(f"     {hit.title}")
            if hit.snippet:  # the terminal gets the passage as text, the matched words between asterisks
                marked = hit.snippet.replace("<mark>", "*").replace("</mark>", "*")
                self.stdout.write(f"     {html.unescape(strip_tags(marked))}")
