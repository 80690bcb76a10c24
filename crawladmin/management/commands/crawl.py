"""`python manage.py crawl <seed URL>…`: crawl until nothing is due, in the current mode.

Embedded (memory:// broker): runs a worker of threads in this process and dispatches from here.
Cluster (Redis broker): dispatches from here (beat does the same, harmlessly) and watches the
workers of the cluster do the work. Run twice, it resumes from the database.

It runs the scans' sweeps as beat does. "Nothing is due" includes NoResponse re-checks due within
--recheck-wait seconds (so a crawl with short back-offs walks failing URLs to Dead before it ends);
Visited URLs due for an active re-check are checked while it runs, but never keep it running.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack, nullcontext

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from tqdm import tqdm

from crawladmin import embedded
from crawlcore.models import UrlEvent
from crawlcore.selectors import crawl_progress, crawl_summary
from crawlcore.services.dispatch import dispatch_due, leases_release_all, reconcile
from crawlcore.services.sweep import scan_sweep
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.lifecycle import Agent, State
from crawler.scope import MODES, Scope
from crawler.urlnorm import UrlError, canonicalize, server_key
from dashboard import rollups

RECONCILE_EVERY = 30.0
SWEEP_EVERY = 2.0  # seconds between the scans' sweeps in the loop (beat's are a minute apart)
# The crawl page's "URLs by state over time": a sample every second at the start, where a short crawl
# does all its work, then every minute as beat takes them; each costs a grouped count of the URLs
# (about a second at a million), so never more often than SAMPLE_COST_SHARE of the time allows.
SAMPLE_EVERY_EARLY, SAMPLE_EARLY_FOR, SAMPLE_EVERY, SAMPLE_COST_SHARE = 1.0, 60.0, 60.0, 0.1


class Command(BaseCommand):
    help = "Crawl from the given seed URLs (and whatever is already due) until nothing is due."

    def add_arguments(self, parser) -> None:
        parser.add_argument("seeds", nargs="*", help="Seed URLs (http/https). Omit to resume.")
        parser.add_argument("--max-pages", type=int, default=None, help="Stop after this many URLs loaded in this run")
        parser.add_argument("--max-seconds", type=float, default=None, help="Stop after this long")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON")
        parser.add_argument(
            "--scope",
            choices=MODES,
            default=None,
            help="Where links from these seeds lead: the seed's host, its registered domain, or anywhere "
            "(up to CRAWL_OFFSITE_DEPTH links off the domain). Default: CRAWL_SCOPE (any)",
        )
        parser.add_argument(
            "--recheck-wait",
            type=float,
            default=60.0,
            help="Wait for NoResponse re-checks due within this many seconds before ending (default 60); "
            "longer back-offs are left to beat",
        )
        parser.add_argument("--threads", type=int, default=None, help="Embedded worker threads")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar")
        parser.add_argument(
            "--dispatch-only", action="store_true", help="Cluster mode: leave dispatching to beat, only watch"
        )

    def handle(self, *args, **opts) -> None:
        seeds = self._seeds(opts["seeds"])
        self._ensure_schema()
        started = timezone.now()
        if seeds:
            mode = opts["scope"] or settings.CRAWL_SCOPE
            new = [NewUrl(u, depth=0, scope=Scope.for_seed(mode, server_key(u).host)) for u in seeds]
            urls_insert(urls=new, trusted=True)
        with ExitStack() as stack:
            if settings.CELERY_EMBEDDED:
                leases_release_all()  # we are the only worker: any lease left is from a dead run
                stack.enter_context(embedded.embedded_worker(opts["threads"], max_pages=opts["max_pages"]))
            reason = self._run(opts, started)
        _sample()  # where the crawl ended
        summary = crawl_summary(since=started)
        summary.update(
            stopped=reason,
            seconds=round((timezone.now() - started).total_seconds(), 2),
            loaded_this_run=_loaded_since(started),
            mode="embedded" if settings.CELERY_EMBEDDED else "cluster",
        )
        if opts["json"]:
            self.stdout.write(json.dumps(summary, indent=2, sort_keys=True))
        else:
            self.stdout.write(format_summary(summary))

    def _ensure_schema(self) -> None:
        """Embedded: create or upgrade the SQLite schema on the fly. Cluster: migrations are an operator's
        step (they may need a maintenance window), so refuse to run on an outdated schema instead."""
        if settings.EMBEDDED:
            call_command("migrate", verbosity=0, interactive=False)
            return
        executor = MigrationExecutor(connections["default"])
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            raise CommandError("the database schema is not up to date: run `python manage.py migrate` first")

    def _seeds(self, raw: list[str]) -> list[str]:
        seeds = []
        for url in raw:
            try:
                seeds.append(canonicalize(url))
            except UrlError as exc:
                raise CommandError(f"seed {url!r} is not a crawlable URL ({exc.reason})") from None
        return seeds

    def _run(self, opts: dict, started) -> str:
        t0 = time.monotonic()
        last_reconcile, last_sweep, next_sample = 0.0, -SWEEP_EVERY, 0.0
        max_pages, max_seconds = opts["max_pages"], opts["max_seconds"]
        quiet = opts["no_progress"] or not sys.stderr.isatty() and opts["json"]
        bar = nullcontext() if quiet else tqdm(desc="crawl", unit=" URLs", file=sys.stderr, dynamic_ncols=True)
        idle_rounds = 0
        try:
            with bar:
                while True:
                    elapsed = time.monotonic() - t0
                    # Counted only when needed: the count grows with the crawl and this loop runs often.
                    loaded = _loaded_since(started) if max_pages is not None or not quiet else 0
                    if max_pages is not None and loaded >= max_pages:
                        return "max-pages"
                    if max_seconds is not None and elapsed >= max_seconds:
                        return "max-seconds"
                    if not opts["dispatch_only"]:
                        dispatch_due()
                        if elapsed - last_reconcile >= RECONCILE_EVERY:
                            reconcile()
                            last_reconcile = elapsed
                        if elapsed - last_sweep >= SWEEP_EVERY:
                            # The same sweeps as beat's; the URLs they reserve count as leased below.
                            scan_sweep(agent=Agent.INACTIVE_SCAN)
                            scan_sweep(agent=Agent.ACTIVE_SCAN)
                            last_sweep = elapsed
                    if elapsed >= next_sample:
                        took = _sample()
                        every = SAMPLE_EVERY_EARLY if elapsed < SAMPLE_EARLY_FOR else SAMPLE_EVERY
                        next_sample = elapsed + max(every, took / SAMPLE_COST_SHARE)
                    progress = crawl_progress(recheck_within=opts["recheck_wait"])
                    if bar is not None and hasattr(bar, "update"):
                        bar.n = loaded
                        bar.set_postfix(progress, refresh=True)
                    # Two quiet looks in a row: a URL inserted between our counts is seen the second time.
                    idle_rounds = idle_rounds + 1 if not any(progress.values()) else 0
                    if idle_rounds >= 2:
                        return "done"
                    # Prompt at the start (short crawls, tests), then light on the database.
                    time.sleep(0.3 if elapsed < 10 else 1.0)
        except KeyboardInterrupt:
            return "interrupted"


def _sample() -> float:
    """The crawl's counts, computed and stored as the dashboard's (so its crawl page is current) and
    kept as a sample of the crawl's history. Returns the seconds it took."""
    t = time.monotonic()
    rollups.figures_refresh(rollups.CRAWL_SUMMARY, rollups.crawl_summary_compute)
    return time.monotonic() - t


def _loaded_since(started) -> int:
    return UrlEvent.objects.filter(agent=Agent.LOAD.value, from_state=State.INIT.value, at__gte=started).count()


def format_summary(s: dict) -> str:
    lines = [
        f"crawl {s['stopped']} after {s['seconds']:.1f}s ({s['mode']} mode): "
        f"{s['loaded_this_run']} URLs loaded this run, {s['urls']} known on {s['servers']} servers",
        "  by state:    " + ", ".join(f"{k} {v}" for k, v in s["states"].items()),
    ]
    if s["excluded"]:
        lines.append("  excluded:    " + ", ".join(f"{k} {v}" for k, v in s["excluded"].items()))
        if any(k.startswith("private address") for k in s["excluded"]):
            lines.append(
                "               (private addresses are skipped; allow them with CRAWL_ALLOW_PRIVATE=127.0.0.0/8)"
            )
    lines.append("  checks:      " + ", ".join(f"{k} {v}" for k, v in s["checks"].items()))
    if s["failure_kinds"]:
        lines.append("  failures:    " + ", ".join(f"{k or 'unknown'} {v}" for k, v in s["failure_kinds"].items()))
    lines.append(f"  pages {s['pages']}, links {s['links']}; still due {s['due']}")
    return "\n".join(lines)
