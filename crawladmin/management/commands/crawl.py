"""`python manage.py crawl <seed URL>…`: crawl until nothing is due, in the current mode.

Embedded (memory:// broker): runs a worker of threads in this process and dispatches from here.
Cluster (Redis broker): dispatches from here (beat does the same, harmlessly) and watches the
workers of the cluster do the work. Run twice, it resumes from the database.

The crawl itself is crawladmin.runner's CrawlRunner, stepped until nothing is due; it runs the scans'
sweeps as beat does. "Nothing is due" includes NoResponse re-checks due within
--recheck-wait seconds (so a crawl with short back-offs walks failing URLs to Dead before it ends);
Visited URLs due for an active re-check are checked while it runs, but never keep it running.

--max-seconds S is a promise about the process: at S the crawl stops, the worker's threads get
SHUTDOWN_GRACE seconds to finish what they are doing, the summary is printed, and the process ends, even
when a thread is still in a request, a name lookup or a parse that no stop signal reaches (it is abandoned:
its URL's lease runs out and the next run takes it up again). Should even the summary not come by
S + SHUTDOWN_GRACE + LAST_RESORT, a watchdog says so on stderr and ends the process (exit status 3).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import nullcontext

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from crawladmin import embedded
from crawladmin.runner import CrawlRunner, Step, crawl_report, crawl_seeds_insert, crawl_workers
from crawlcore.models import Job
from crawlcore.schema import SchemaOutdated, schema_ensure
from crawlcore.selectors_jobs import job_detail
from crawlcore.services.job_life import JobError, job_finish, job_start
from crawler.scope import MODES
from crawler.urlnorm import UrlError, canonicalize

# Seconds the worker's threads get after --max-seconds to end what they are doing (a load batch stops
# after its current request); then the summary is printed and the process ends whatever they still do.
SHUTDOWN_GRACE = 10.0
# The watchdog's margin past that, for a summary that does not come (the database does not answer).
LAST_RESORT = 60.0


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
        parser.add_argument(
            "--job",
            default=None,
            metavar="NAME",
            help="Run this crawl job (manage.py job list): embedded, to its end; in the cluster, start it and return",
        )
        parser.add_argument("--threads", type=int, default=None, help="Embedded worker threads")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar")
        parser.add_argument(
            "--dispatch-only", action="store_true", help="Cluster mode: leave dispatching to beat, only watch"
        )

    def handle(self, *args, **opts) -> None:
        seeds = self._seeds(opts["seeds"])
        if opts["job"] is not None and (seeds or opts["scope"]):
            raise CommandError("--job takes its seeds and scope from the job: give no seed URL or --scope")
        self._ensure_schema()
        started = timezone.now()
        job = self._job(opts["job"]) if opts["job"] is not None else None
        if job is not None and not settings.CELERY_EMBEDDED:
            self._job_start(job)
            self._job_started(job, opts["json"])
            return
        if seeds:
            crawl_seeds_insert(seeds=seeds, scope=opts["scope"])
        quiet = opts["no_progress"] or not sys.stderr.isatty() and opts["json"]
        runner = CrawlRunner(
            started=started,
            t0=time.monotonic(),
            max_pages=opts["max_pages"],
            max_seconds=opts["max_seconds"],
            recheck_wait=opts["recheck_wait"],
            dispatch=not opts["dispatch_only"],
            count_loaded=not quiet,
            waiting=None if job is None else _paused(job.id),
        )
        bar = nullcontext() if quiet else tqdm(desc="crawl", unit=" URLs", file=sys.stderr, dynamic_ncols=True)

        def show(step: Step) -> None:
            if bar is not None and hasattr(bar, "update") and step.progress:
                bar.n = step.loaded
                bar.set_postfix(step.progress, refresh=True)

        deadline = None if opts["max_seconds"] is None else runner.t0 + opts["max_seconds"] + SHUTDOWN_GRACE
        watchdog = None if deadline is None else _watchdog(deadline + LAST_RESORT - time.monotonic())
        try:
            with crawl_workers(threads=opts["threads"], max_pages=opts["max_pages"], deadline=deadline), bar:
                if job is not None:
                    self._job_start(job)  # with the worker up: the dispatch it sends is taken at once
                reason = runner.run(on_step=show)
            summary = crawl_report(started=started, stopped=reason)
            if job is not None:
                job_finish(job_id=job.id, reason=reason)
                job.refresh_from_db()
                summary["job"] = job_detail(job=job)
            if opts["json"]:
                self.stdout.write(json.dumps(summary, indent=2, sort_keys=True))
            else:
                self.stdout.write(format_summary(summary))
        finally:
            if watchdog is not None:
                watchdog.cancel()
        status = 0
        refused = _refused(seeds)
        if seeds and len(refused) == len(seeds):
            self.stderr.write(
                "crawl: no seed could be crawled: "
                + "; ".join(f"{url} ({why})" for url, why in refused.items())
            )
            status = 1
        stuck = embedded.abandoned_threads()
        if stuck:
            # Not daemon threads: the interpreter would wait for them at exit, for as long as they take.
            self.stderr.write(
                f"{len(stuck)} worker thread(s) still busy after the crawl stopped; ending the process without "
                "them (their URLs are taken up again by the next run)"
            )
            _exit_now(status)
        if status:
            raise SystemExit(status)

    def _job(self, name: str) -> Job:
        job = Job.objects.filter(name=name).first()
        if job is None:
            raise CommandError(f"no job named {name!r} (manage.py job list)")
        if not job.enabled:
            raise CommandError(f"job {name!r} is disabled")
        if job.state == Job.PAUSED:
            raise CommandError(f"job {name!r} is paused: manage.py job resume {name}")
        return job

    def _job_start(self, job: Job) -> None:
        """Start a run of the job, or go on with the one that runs."""
        if job.state != Job.RUNNING:
            try:
                job_start(name=job.name, trigger="crawl")
            except JobError as exc:
                raise CommandError(str(exc)) from None
        job.refresh_from_db()

    def _job_started(self, job: Job, as_json: bool) -> None:
        """Cluster mode: the cluster's workers and beat run the job; this command only started it."""
        detail = job_detail(job=job)
        if as_json:
            self.stdout.write(json.dumps(detail, indent=2, sort_keys=True))
        else:
            self.stdout.write(f"job {job.name} {job.state}: the cluster runs it (manage.py job show {job.name})")

    def _ensure_schema(self) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None

    def _seeds(self, raw: list[str]) -> list[str]:
        seeds = []
        for url in raw:
            try:
                seeds.append(canonicalize(url))
            except UrlError as exc:
                raise CommandError(f"seed {url!r} is not a crawlable URL ({exc.reason}){_did_you_mean(url)}") from None
        return seeds


def _paused(job_id: int):
    """The runner's `waiting`: while the job is paused the embedded crawl keeps its worker and waits for
    `job resume` (it goes on with the same run) or `job stop`, within --max-seconds."""

    def waiting() -> bool:
        return Job.objects.filter(id=job_id, state=Job.PAUSED).exists()

    return waiting


def _refused(seeds: list[str]) -> dict[str, str]:
    """The seeds that yielded nothing: set aside (robots.txt, an excluded server…) or failed without a valid
    answer (refused, silent, no such name, 4xx/5xx), each with why."""
    from crawlcore.models import Url
    from crawler.lifecycle import State
    from crawler.urlnorm import url_hash

    failing = (State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value)
    rows = Url.objects.filter(url_hash__in=[url_hash(u) for u in seeds]).values_list(
        "url", "state", "failure_kind", "last_status", "exclusion_reason"
    )
    out = {}
    for url, state, kind, status, excluded in rows:
        if excluded:
            out[url] = excluded
        elif state in failing:
            out[url] = kind or (f"HTTP {status}" if status else "no valid answer")
    return out


def _exit_now(status: int) -> None:
    """End the process at once, its output flushed: no wait for threads that cannot be stopped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _watchdog(seconds: float) -> threading.Timer:
    def fire() -> None:
        sys.stderr.write(f"crawl: no summary {seconds:.0f}s after the crawl was due to stop; ending the process\n")
        _exit_now(3)

    timer = threading.Timer(max(0.0, seconds), fire)
    timer.daemon = True
    timer.start()
    return timer


def _did_you_mean(url: str) -> str:
    """A seed written without its scheme (example.org, www.example.org/news): the URL it most likely means."""
    if "://" in url or not url.strip():
        return ""
    try:
        guess = canonicalize("http://" + url.strip().lstrip("/"))
    except UrlError:
        return ""
    return f"; did you mean {guess}?"


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
    if "job" in s:
        p = s["job"]["progress"]
        lines.append(f"  job {s['job']['name']}: done {p['done']}, failed {p['failed']}, queued {p['queued']}")
    return "\n".join(lines)
