"""The crawl runner: what `manage.py crawl` does between seeding and the summary, one step at a time.

A command crawl plays beat's part for the crawl while it runs: each step dispatches due servers and runs
whichever of the crawl's periodic jobs are due (crawlcore.beat's reconcile and the two scan sweeps, and a
sample of the crawl's counts for the dashboard), then looks whether anything is left to do. In the cluster
mode beat runs the same jobs too, harmlessly: every one of them is idempotent.

The cadences are the command's, not beat's: a command crawl ends when nothing is due, so it cannot wait a
minute for the next sweep; it sweeps every two seconds and dispatches every step. `step(now)` takes the
clock reading, so a test drives the runner one step at a time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from crawladmin import embedded
from crawlcore.beat import beat_job
from crawlcore.models import UrlEvent
from crawlcore.selectors import crawl_progress, crawl_summary, due_count
from crawlcore.services.extract import pages_text_fill
from crawlcore.services.health import backoff_rule
from crawlcore.services.job_runs import jobs_sample
from crawlcore.services.load_dispatch import dispatch_due, leases_release_all, reconcile
from crawlcore.services.search_index import pages_index
from crawlcore.services.sweep import scan_sweep
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.lifecycle import Agent, State
from crawler.scope import Scope
from crawler.urlnorm import server_key
from dashboard import rollups
from monitoring.services.check_dispatch import monitors_dispatch_due

MONITOR_LOOK_EVERY = 1.0  # seconds between looks for due monitors in an embedded crawl
RECONCILE_EVERY = 30.0  # beat's is a minute: a lease lost in a short crawl is picked up sooner
INDEX_EVERY = float(beat_job("tasks.housekeeping.search_index").seconds)
SWEEP_EVERY = 2.0  # seconds between the scans' sweeps (beat's are a minute apart)
JOB_SAMPLE_EVERY = 5.0
# The crawl page's "URLs by state over time": a sample every second at the start, where a short crawl
# does all its work, then every minute as beat takes them; each costs a grouped count of the URLs
# (about a second at a million), so never more often than COST_SHARE of the time allows.
SAMPLE_EVERY_EARLY, SAMPLE_EARLY_FOR, SAMPLE_EVERY = 1.0, 60.0, 60.0
# Every periodic job of the runner, and its full progress count, takes at most this share of the time: each
# runs again no sooner than its last run's duration divided by it. The sweeps and the counts read tables
# that grow with the crawl (a second and more at a million URLs); at a fixed cadence they would take a
# growing share of the database as a long crawl goes on.
COST_SHARE = 0.1
# Two quiet looks in a row end the crawl: a URL inserted between one look's counts is seen by the next.
IDLE_STEPS_TO_FINISH = 2
# While URLs are due the crawl cannot be finished: the other progress counts (leased reads the whole URL
# table, rechecks joins the servers) are refreshed this often only, for the progress bar; once nothing is
# due, every step counts everything afresh, so the end is never decided on old figures (counted every
# step, they were a visible share of a large crawl's database time: bench/THROUGHPUT.md).
FULL_PROGRESS_EVERY = 10.0
# Seconds a crawl goes on trying its steps while the database stays locked (CrawlRunner.run).
LOCKED_FOR = 300.0

log = logging.getLogger(__name__)


def crawl_sample() -> float:
    """The crawl's counts, computed and stored as the dashboard's (so its crawl page is current) and
    kept as a sample of the crawl's history. Returns the seconds it took."""
    t = time.monotonic()
    rollups.figures_refresh(rollups.CRAWL_SUMMARY, rollups.crawl_summary_compute)
    return time.monotonic() - t


def loaded_since(started: datetime) -> int:
    """URLs loaded (Init → Visited or NoResponse1 by the load agent) since `started`."""
    return UrlEvent.objects.filter(agent=Agent.LOAD.value, from_state=State.INIT.value, at__gte=started).count()


def crawl_seeds_insert(*, seeds: list[str], scope: str | None = None) -> None:
    """Insert canonical seed URLs as Init, each scoped to its own host by `scope` (default CRAWL_SCOPE)."""
    mode = scope or settings.CRAWL_SCOPE
    urls_insert(urls=[NewUrl(u, depth=0, scope=Scope.for_seed(mode, server_key(u).host)) for u in seeds], trusted=True)


@contextmanager
def crawl_workers(
    *, threads: int | None = None, max_pages: int | None = None, deadline: float | None = None
) -> Iterator[None]:
    """The workers for the duration of a crawl: in the embedded mode a thread-pool worker in this process,
    waited for at the end no later than `deadline` (time.monotonic's scale); in the cluster mode nothing (the
    cluster's workers do the work)."""
    with ExitStack() as stack:
        if settings.CELERY_EMBEDDED:
            leases_release_all()  # we are the only worker: any lease left is from a dead run
            stack.enter_context(embedded.embedded_worker(threads, max_pages=max_pages, deadline=deadline))
        yield


def crawl_report(*, started: datetime, stopped: str) -> dict:
    """The summary of a crawl that ran from `started` and stopped for the reason `stopped`."""
    crawl_sample()  # where the crawl ended
    summary = crawl_summary(since=started)
    summary.update(
        stopped=stopped,
        seconds=round((timezone.now() - started).total_seconds(), 2),
        loaded_this_run=loaded_since(started),
        mode="embedded" if settings.CELERY_EMBEDDED else "cluster",
    )
    return summary


@dataclass
class Job:
    """A periodic job of the runner: `run()` when due; `interval(elapsed, took)` says when next."""

    name: str
    run: Callable[[], object]
    interval: Callable[[float, float], float]
    due_at: float = 0.0  # seconds since the runner started

    def run_if_due(self, elapsed: float, timer: Callable[[], float] = time.monotonic) -> bool:
        if elapsed < self.due_at:
            return False
        t = timer()
        self.run()
        took = timer() - t
        self.due_at = elapsed + self.interval(elapsed, took)
        return True


def _every(seconds: float) -> Callable[[float, float], float]:
    """Every `seconds`, or less often when a run takes more than COST_SHARE of that."""
    return lambda elapsed, took: max(seconds, took / COST_SHARE)


def _sample_interval(elapsed: float, took: float) -> float:
    every = SAMPLE_EVERY_EARLY if elapsed < SAMPLE_EARLY_FOR else SAMPLE_EVERY
    return max(every, took / COST_SHARE)


def _reconcile() -> None:
    """Beat's reconcile job (tasks.housekeeping): leases and lost messages, then a few pages' text."""
    reconcile()
    pages_text_fill()


def crawl_jobs(*, dispatch: bool = True) -> list[Job]:
    """The runner's jobs, in the order a step runs them; without `dispatch` (the cluster's --dispatch-only),
    only the sample: beat dispatches, reconciles, sweeps and indexes. Embedded, the monitor's checks are sent too, as
    beat sends them in the cluster: a server the monitor confirms down holds its crawl, and its recovery
    releases it (crawlcore.services.health), so the two halves work together in one process as well."""
    sample = Job("crawl sample", crawl_sample, _sample_interval)
    if not dispatch:
        return [sample]
    embedded = []
    if settings.CELERY_EMBEDDED:
        # Each monitor is due every MONITOR_INTERVAL (or its own interval); a look a second finds it on time.
        embedded = [Job(beat_job("tasks.monitor.dispatch").name, monitors_dispatch_due, _every(MONITOR_LOOK_EVERY))]
    return [*embedded,
        Job(beat_job("tasks.housekeeping.dispatch").name, dispatch_due, _every(0.0)),
        Job(
            beat_job("tasks.housekeeping.reconcile").name, _reconcile, _every(RECONCILE_EVERY),
            due_at=RECONCILE_EVERY,
        ),
        # Inactive first, as beat's table lists them; the URLs they reserve count as leased below.
        Job(
            beat_job("tasks.scan.sweep_inactive").name, lambda: scan_sweep(agent=Agent.INACTIVE_SCAN),
            _every(SWEEP_EVERY),
        ),
        Job(
            beat_job("tasks.scan.sweep_active").name, lambda: scan_sweep(agent=Agent.ACTIVE_SCAN), _every(SWEEP_EVERY)
        ),
        # The pages' full-text vectors (PostgreSQL; on SQLite the extract agent indexes in line and this finds
        # nothing), as often as beat sends them: the crawl waits for its pages to be searchable (crawl_progress).
        Job(beat_job("tasks.housekeeping.search_index").name, pages_index, _every(INDEX_EVERY)),
        # The crawl jobs' progress for their pages' charts (beat's jobs tick takes them in a cluster).
        Job("crawl jobs' samples", jobs_sample, _every(JOB_SAMPLE_EVERY)),
        sample,
    ]


@dataclass
class Step:
    """What one step did and saw. `stopped` is the reason the crawl ends (max-pages, max-seconds, done), or
    None to go on; `loaded` is counted only when the runner was asked to."""

    elapsed: float
    ran: list[str] = field(default_factory=list)
    loaded: int = 0
    progress: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None


class CrawlRunner:
    """Runs a crawl from `started` until nothing is due (see crawl_progress), a limit, or Ctrl-C."""

    def __init__(
        self,
        *,
        started: datetime,
        t0: float,
        max_pages: int | None = None,
        max_seconds: float | None = None,
        recheck_wait: float = 60.0,
        dispatch: bool = True,
        count_loaded: bool = False,
        timer: Callable[[], float] = time.monotonic,
        waiting: Callable[[], bool] | None = None,
    ) -> None:
        self.started, self.t0 = started, t0
        # While it says so (a crawl job paused, to be resumed), nothing due does not end the crawl.
        self.waiting = waiting
        self.max_pages, self.max_seconds = max_pages, max_seconds
        # A crawl waits for a held server's first probe (a server whose robots.txt or monitor said it is
        # gone gets one more look within a back-off window): a wait just shorter than the window's far end
        # would end the crawl before the probe, or not, by the window's jitter.
        self.recheck_wait = max(recheck_wait, backoff_rule().first_longest())
        # Counted only when needed: the count grows with the crawl and steps come often.
        self.count_loaded = count_loaded or max_pages is not None
        self.jobs = crawl_jobs(dispatch=dispatch)
        self.timer = timer  # what the jobs' and counts' own durations are measured with
        self.idle_steps = 0
        self._full_progress: dict[str, int] = {}
        self._full_progress_at = 0.0
        self._recount_at = 0.0

    def step(self, now: float) -> Step:
        """One round at clock reading `now` (time.monotonic's scale, t0 the start)."""
        step = Step(elapsed=now - self.t0)
        step.loaded = loaded_since(self.started) if self.count_loaded else 0
        if self.max_pages is not None and step.loaded >= self.max_pages:
            step.stopped = "max-pages"
            return step
        if self.max_seconds is not None and step.elapsed >= self.max_seconds:
            step.stopped = "max-seconds"
            return step
        step.ran = [job.name for job in self.jobs if job.run_if_due(step.elapsed, self.timer)]
        step.progress = self._progress(step.elapsed)
        self.idle_steps = self.idle_steps + 1 if not any(step.progress.values()) else 0
        if self.idle_steps >= IDLE_STEPS_TO_FINISH:
            if self.waiting is not None and self.waiting():
                self.idle_steps = 0
                step.progress = {**step.progress, "waiting": 1}
            else:
                step.stopped = "done"
        return step

    def _progress(self, elapsed: float) -> dict[str, int]:
        """crawl_progress, its costly counts carried over between full counts while URLs are still due, or
        while the counts carried over still show work in hand (pages being fetched or waiting to be
        extracted: old figures of work in hand can only put the end off, never bring it early) until
        COST_SHARE of the time allows the next count. With nothing due and nothing in hand, every step
        counts everything afresh, so the end is decided on fresh figures."""
        if self._full_progress and elapsed < self._full_progress_at:
            due = due_count(wait=self.recheck_wait)
            in_hand = any(v for k, v in self._full_progress.items() if k != "due")
            if due or (in_hand and elapsed < self._recount_at):
                return {**self._full_progress, "due": due}
        t = self.timer()
        self._full_progress = crawl_progress(recheck_within=self.recheck_wait)
        self._full_progress_at = elapsed + FULL_PROGRESS_EVERY
        self._recount_at = elapsed + (self.timer() - t) / COST_SHARE
        return self._full_progress

    def run(
        self,
        *,
        on_step: Callable[[Step], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> str:
        """Step until stopped; returns the reason ("interrupted" on Ctrl-C).

        A step that finds the database locked (SQLite, a worker's long write outlasting the busy timeout) is
        tried again on the next one: one long write must not end the crawl. Locked for LOCKED_FOR seconds in
        a row, or past --max-seconds, the error goes up to the command."""
        locked_since: float | None = None
        try:
            while True:
                now = clock()
                try:
                    step = self.step(now)
                except OperationalError as exc:
                    if "locked" not in str(exc):
                        raise
                    locked_since = now if locked_since is None else locked_since
                    over = self.max_seconds is not None and now - self.t0 >= self.max_seconds
                    if over or now - locked_since >= LOCKED_FOR:
                        raise
                    log.warning("crawl step: %s; trying again", exc)
                    sleep(1.0)
                    continue
                locked_since = None
                if on_step is not None:
                    on_step(step)
                if step.stopped:
                    return step.stopped
                # Prompt at the start (short crawls, tests), then light on the database.
                sleep(0.3 if step.elapsed < 10 else 1.0)
        except KeyboardInterrupt:
            return "interrupted"
