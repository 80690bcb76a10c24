"""`python manage.py analyze [--json | --csv DIR]`: analyse the pages not analysed yet (new, or fetched again
since), give the active foreign domains an address when national IP ranges are configured, then print
the report of seed 001's analyzer: pages by language, by top-level domain (Table 2.1) and national
second-level domain, by content type; homepages; active domains, national and foreign.

--csv DIR writes one CSV per table into DIR, plus the lists of homepages and active domains.
--report-only skips the analysis and reports what is stored.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from tqdm import tqdm

from analyzer import resolve
from analyzer.selectors import active_domain_list, analysis_report, homepage_list
from analyzer.services import domains_resolve, national_networks, pages_analyse, pages_pending


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
        national, networks = settings.ANALYZER_NATIONAL_TLD, national_networks()
        show = not opts["no_progress"]
        run: dict = {}
        if not opts["report_only"]:
            pending = pages_pending(reanalyse=opts["reanalyse"]).count()
            if opts["limit"] is not None:
                pending = min(pending, opts["limit"])
            # disable=None: tqdm draws only on a terminal, so --json piped to a file stays clean.
            with tqdm(total=pending, desc="analyse", unit="page", file=sys.stderr, disable=None if show else True,
                      dynamic_ncols=True) as bar:
                outcome = pages_analyse(
                    batch_size=opts["batch_size"], reanalyse=opts["reanalyse"], limit=opts["limit"], progress=bar.update
                )
            run = {"analyzed": outcome.pages, "failed": outcome.failed, "new_domains": outcome.new_domains,
                   "seconds": round(outcome.seconds, 3)}
            if networks and not opts["no_resolve"]:
                with tqdm(desc="resolve", unit="domain", file=sys.stderr, disable=None if show else True) as bar:
                    resolved = domains_resolve(
                        resolver=resolve.system_resolver, national_tld=national, networks=networks,
                        progress=bar.update,
                    )
                run["resolved"] = {"asked": resolved.asked, "from_crawl": resolved.from_crawl, "found": resolved.found}
        report = analysis_report(national_tld=national, networks=networks)
        if run:
            report["run"] = run
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
        elif opts["csv"]:
            written = write_csv(Path(opts["csv"]), report, national_tld=national, networks=networks)
            self.stdout.write(f"wrote {len(written)} files to {opts['csv']}: {', '.join(written)}")
        else:
            self.stdout.write(format_report(report))

    def _ensure_schema(self) -> None:
        """Embedded: create or upgrade the SQLite schema on the fly (as `crawl` does). Cluster: refuse to
        run on an outdated schema; migrating is an operator's step."""
        executor = MigrationExecutor(connections["default"])
        if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
            return
        if not settings.EMBEDDED:
            raise CommandError("the database schema is not up to date: run `python manage.py migrate` first")
        call_command("migrate", verbosity=0, interactive=False)


# --- output -------------------------------------------------------------------------------------

def _table(title: str, header: tuple[str, str, str], rows: list[tuple[str, int, float]]) -> list[str]:
    width = max([len(header[0])] + [len(str(r[0])) for r in rows])
    lines = [title, f"  {header[0]:<{width}}  {header[1]:>11}  {header[2]:>7}"]
    lines += [f"  {name:<{width}}  {count:>11,}  {share:>7.1%}" for name, count, share in rows]
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


def _write(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def write_csv(directory: Path, r: dict, *, national_tld: str, networks) -> list[str]:
    """One file per table of the report, and the full lists of homepages and active domains."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--csv {directory}: {exc}") from None
    active = r["active_domains"]
    tables = {
        "languages.csv": (["language", "name", "pages", "share"],
                          [(x["language"], x["name"], x["pages"], x["share"]) for x in r["languages"]]),
        "domains.csv": (["domain", "pages", "share"], [(x["domain"], x["pages"], x["share"]) for x in r["domains"]]),
        "country_codes.csv": (["tld", "pages", "share"],
                              [(x["tld"], x["pages"], x["share"]) for x in r["country_codes"]]),
        "national_slds.csv": (["sld", "pages", "share"],
                              [(x["sld"], x["pages"], x["share"]) for x in r["national_slds"]]),
        "content_classes.csv": (["class", "pages", "share"],
                                [(x["class"], x["pages"], x["share"]) for x in r["content_classes"]]),
        "media_types.csv": (["media_type", "class", "pages", "share"],
                            [(x["media_type"], x["class"], x["pages"], x["share"]) for x in r["media_types"]]),
        "active_domain_scopes.csv": (["scope", "domains", "share"],
                                     [(x["scope"], x["domains"], x["share"]) for x in active["scopes"]]),
        "summary.csv": (["figure", "value"], [
            ("pages_stored", r["pages"]["stored"]), ("pages_analyzed", r["pages"]["analyzed"]),
            ("pages_pending", r["pages"]["pending"]), ("pages_with_text", r["language_pages"]),
            ("homepages", r["homepages"]["total"]),
            ("homepages_user", r["homepages"]["user"]), ("homepages_root", r["homepages"]["root"]),
            ("homepages_national", r["homepages"]["national"]["total"]), ("active_domains", active["total"]),
            ("active_national", active["national"]), ("active_foreign_national_ip", active["foreign_national_ip"]),
            ("active_foreign", active["foreign"]), ("active_unresolved", active["unresolved"]),
            ("active_named_web", active["by_source"]["web"]), ("active_named_email", active["by_source"]["email"]),
            ("active_named_ftp", active["by_source"]["ftp"]),
        ]),
    }
    for name, (header, rows) in tables.items():
        _write(directory / name, header, rows)
    _write(directory / "homepages.csv", ["homepage", "kind"], homepage_list())
    _write(
        directory / "active_domains.csv",
        ["domain", "scope", "ip", "web", "email", "ftp"],
        ([d["domain"], d["scope"], d["ip"], int(d["web"]), int(d["email"]), int(d["ftp"])]
         for d in active_domain_list(national_tld=national_tld, networks=networks)),
    )
    return [*tables, "homepages.csv", "active_domains.csv"]
