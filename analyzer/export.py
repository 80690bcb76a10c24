"""The analyzer's report as CSV files, for `manage.py analyze --csv DIR`."""

from __future__ import annotations

import csv
from pathlib import Path

from .selectors import active_domain_list, homepage_list


def _write(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def report_csv_write(directory: Path, r: dict, *, national_tld: str, networks) -> list[str]:
    """One file per table of the report (analysis_report's), and the full lists of homepages and active
    domains; returns the file names. Raises OSError when the directory cannot be made."""
    directory.mkdir(parents=True, exist_ok=True)
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
