"""`python manage.py dashboard_refresh [--only rollups|dead_links] [--full] [--json]`: what the dashboard's two
beat jobs do, once, now: the check totals and every server's figures (beat: every minute), the broken-link
report (beat: every five minutes, from what changed since its previous run; `--full` recomputes it from every
link). For a cluster whose beat is not running yet, after a bulk import, and
for the benchmark (bench/dashboard.py), which stands in for beat with it."""

from __future__ import annotations

import functools
import json
import time

from django.core.management.base import BaseCommand

from dashboard import rollups

JOBS = {"rollups": rollups.rollups_refresh, "dead_links": rollups.dead_links_refresh}


class Command(BaseCommand):
    help = "Recompute the dashboard's rollups now (what beat does every minute and every five minutes)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--only", choices=sorted(JOBS), help="one of the two jobs (default: both)")
        parser.add_argument(
            "--full", action="store_true", help="the broken-link record from every link, not from what changed"
        )
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")

    def handle(self, *args, **options) -> None:
        t = time.perf_counter()
        jobs = {**JOBS, "dead_links": functools.partial(rollups.dead_links_refresh, full=options["full"])}
        out = {name: job() for name, job in jobs.items() if options["only"] in (None, name)}
        out["seconds"] = round(time.perf_counter() - t, 3)
        if options["json"]:
            self.stdout.write(json.dumps(out))
            return
        for name, result in out.items():
            self.stdout.write(f"{name}: {result}")
