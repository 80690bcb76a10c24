"""`python manage.py analyze [--json | --csv DIR]`: analyse the pages not analysed yet (new, or fetched again
since), give the active foreign domains an address when national IP ranges are configured, then print
the report of seed 001's analyzer: pages by language, by top-level domain (Table 2.1) and national
second-level domain, by content type; homepages; active domains, national and foreign.

--csv DIR writes one CSV per table into DIR, plus the lists of homepages and active domains.
--report-only skips the analysis and reports what is stored.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from analyzer.export import report_csv_write
from analyzer.run import analysis_run
from analyzer.services import national_networks
from crawlcore.schema import SchemaOutdated, schema_ensure
from crawler.sanitize import terminal_safe


class Command(BaseCommand):
    help = "Analyse the crawl's pages (language, domains, content types, homepages, active domains) and report."

    def add_arguments(self, parser) -> None:
        out = parser.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="Print the report as JSON")
        out.add_argument("--csv", metavar="DIR", help="Write the report as CSV files into DIR")
        parser.add_argument("--report-only", action="store_true", help="Do not analyse; report what is stored")
        parser.add_argument("--reanalyse", action="store_true", help="Analyse every page again, not only new ones")
        parser.add_argument("--batch-size", type=int, default=1000, help="Pages per read and write (default 1000)")
        parser.add_argument("--limit", type=int, default=None, help="Analyse at most this many pages")
        parser.add_argument(
            "--no-resolve", action="store_true", help="Do not look up addresses of foreign domains (no DNS)"
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar")

    def handle(self, *args, **opts) -> None:
        if opts["batch_size"] < 1 or (opts["limit"] is not None and opts["limit"] < 0):
            raise CommandError("--batch-size must be positive and --limit not negative")
        self._ensure_schema()
        show = not opts["no_progress"]

        @contextmanager
        def bars(stage: str, total: int | None):
            # disable=None: tqdm draws only on a terminal, so --json piped to a file stays clean.
            style = {"unit": "page", "dynamic_ncols": True} if stage == "analyse" else {"unit": "domain"}
            with tqdm(total=total, desc=stage, file=sys.stderr, disable=None if show else True, **style) as bar:
                yield bar.update

        report = analysis_run(
            analyse=not opts["report_only"], reanalyse=opts["reanalyse"], batch_size=opts["batch_size"],
            limit=opts["limit"], resolve_domains=not opts["no_resolve"], bars=bars,
        )
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
        elif opts["csv"]:
            try:
                written = report_csv_write(
                    Path(opts["csv"]), report, national_tld=settings.ANALYZER_NATIONAL_TLD, networks=national_networks()
                )
            except OSError as exc:
                raise CommandError(f"--csv {opts['csv']}: {exc}") from None
            self.stdout.write(f"wrote {len(written)} files to {opts['csv']}: {', '.join(written)}")
        else:
            self.stdout.write(format_report(report))

    def _ensure_schema(self) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None


# --- output -------------------------------------------------------------------------------------

def _table(title: str, header: tuple[str, str, str], rows: list[tuple[str, int, float]]) -> list[str]:
    width = max([len(header[0])] + [len(str(r[0])) for r in rows])
    lines = [title, f"  {header[0]:<{width}}  {header[1]:>11}  {header[2]:>7}"]
    # Names come from crawled pages (a lang attribute, a domain): shown, never acted on by the terminal.
    lines += [f"  {terminal_safe(str(name)):<{width}}  {count:>11,}  {share:>7.1%}" for name, count, share in rows]
    return lines + [""]


def format_report(r: dict) -> str:
    pages, homes, active = r["pages"], r["homepages"], r["active_domains"]
    nat = r["national_tld"]
    lines = [f"{pages['analyzed']:,} of {pages['stored']:,} stored pages analysed ({pages['pending']:,} pending); "
             f"national TLD .{nat}"]
    if "run" in r:
        run = r["run"]
        lines.append(f"this run: {run['analyzed']:,} pages in {run['seconds']} s ({run['failed']} failed)")
    lines.append("")
    lines += _table(f"Pages by language (of {r['language_pages']:,} pages with text)", ("language", "pages", "share"),
                    [(f"{x['name']} ({x['language']})" if x["language"] else x["name"], x["pages"], x["share"])
                     for x in r["languages"]])
    lines += _table("Pages by domain (Table 2.1)", ("domain", "pages", "share"),
                    [(x["domain"], x["pages"], x["share"]) for x in r["domains"]])
    lines += _table("Pages by country code", ("tld", "pages", "share"),
                    [(x["tld"], x["pages"], x["share"]) for x in r["country_codes"]])
    lines += _table(f"Pages by national second-level domain (.{nat})", ("domain", "pages", "share"),
                    [(x["sld"], x["pages"], x["share"]) for x in r["national_slds"]])
    lines += _table("Pages by content class", ("class", "pages", "share"),
                    [(x["class"], x["pages"], x["share"]) for x in r["content_classes"]])
    lines += _table("Pages by media type", ("media type", "pages", "share"),
                    [(x["media_type"] or "(none)", x["pages"], x["share"]) for x in r["media_types"]])
    lines += [f"Homepages: {homes['total']:,} ({homes['user']:,} ~user, {homes['root']:,} host roots); "
              f"national {homes['national']['total']:,}", ""]
    lines += _table("Active domains", ("scope", "domains", "share"),
                    [(x["scope"], x["domains"], x["share"]) for x in active["scopes"]]
                    + [("total", active["total"], 1.0 if active["total"] else 0.0)])
    src = active["by_source"]
    lines += [f"  named as web hosts {src['web']:,}, in e-mail addresses {src['email']:,}, "
              f"in FTP addresses {src['ftp']:,}; foreign without address {active['unresolved']:,}", ""]
    lines += _table(f"Active national domains (.{nat})", ("domain", "domains", "share"),
                    [(x["sld"], x["domains"], x["share"]) for x in active["national_slds"]])
    return "\n".join(lines).rstrip() + "\n"
