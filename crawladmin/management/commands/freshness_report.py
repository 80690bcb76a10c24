"""`python manage.py freshness_report [--format table|csv|json]`: each freshness objective now, one row each:
objective, site, pages, p50_staleness_s, p95_staleness_s, target_s, met, hours_met_pct, budget, budget_needed,
lastmod_honesty (crawlcore.selectors_freshness, the figures the API and the dashboard show).

met: the p95 staleness is within the target now; hours_met_pct: the share of the last 30 days' recorded hours
in which it was; budget_needed: the requests per server and day that would hold the target (more than the
budget: the objective is unattainable at its budget, which the table says).
"""

from __future__ import annotations

import csv
import io
import json

from django.core.management.base import BaseCommand

from crawlcore.selectors_freshness import FIELDS, objectives_status
from crawler.brokenlinks import report_cell

FORMATS = ("table", "csv", "json")


def report_text(rows: list[dict], fmt: str) -> str:
    """The rows as a readable table, CSV (exactly FIELDS) or JSON (FIELDS and `attainable`)."""
    if fmt == "json":
        return json.dumps([{k: r[k] for k in (*FIELDS, "attainable")} for r in rows], indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(FIELDS)
        for r in rows:
            writer.writerow([report_cell(r[c]) for c in FIELDS])
        return out.getvalue()
    return _table(rows)


def _table(rows: list[dict]) -> str:
    """Columns padded to their widest cell, then a line for each objective its budget cannot hold."""
    table = [list(FIELDS)] + [[report_cell(r[c]) or "-" for c in FIELDS] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(FIELDS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines += [f"{r['objective']}: unattainable at {r['budget']} requests/server/day; needs {r['budget_needed']}"
              for r in rows if not r["attainable"]]  # fmt: skip
    return "\n".join(lines) + "\n"


class Command(BaseCommand):
    help = "Each freshness objective now: p50/p95 staleness, target met, hours met over 30 days, budget needed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--format", choices=FORMATS, default="table", dest="fmt",
                            help="table (readable, the default), csv or json")  # fmt: skip

    def handle(self, *args, fmt: str = "table", **options) -> None:
        rows = objectives_status()
        self.stdout.write(report_text(rows, fmt), ending="")
        if not rows and fmt == "table":
            self.stderr.write("no freshness objective (add one under `freshness:` in the configuration file)")
