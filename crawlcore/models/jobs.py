"""Crawl jobs an operator defines, their runs, and the URLs each job reached (with its depth from the job's
seeds): what lets several jobs share the one frontier, each within its own limits."""

from __future__ import annotations

from datetime import datetime

from django.db import models

from crawler import jobrules, windows

from .urls import Url


class Job(models.Model):
    """A crawl an operator defines: seeds, scope, limits, patterns, politeness, windows and a schedule.

    Several jobs run side by side over the one frontier: a URL reached by two jobs is one Url row, fetched
    once, with a JobUrl row for each job (its depth from that job's seeds). Only the pages of a job's own
    URLs lead it on, so its limits hold whatever another job does. A crawl started without a job
    (`crawl URL…`) is the default crawl: its URLs have no JobUrl row and follow the global settings."""

    IDLE, RUNNING, PAUSED, STOPPED = "idle", "running", "paused", "stopped"
    STATES = [(s, s.title()) for s in (IDLE, RUNNING, PAUSED, STOPPED)]
    SCOPES = [("host", "Host"), ("domain", "Domain"), ("any", "Any")]

    name = models.CharField(max_length=100, unique=True)
    group = models.CharField(max_length=100, blank=True, help_text="Server group: readers limited to it see it")
    seeds = models.JSONField(default=list, help_text="Seed URLs (depth 0)")
    scope = models.CharField(max_length=6, choices=SCOPES, default="host")
    max_depth = models.PositiveIntegerField(
        null=True, blank=True, help_text="Links from a seed; empty: CRAWL_MAX_DEPTH"
    )
    max_pages = models.PositiveIntegerField(null=True, blank=True, help_text="URLs the job takes in; empty: no limit")
    include = models.JSONField(
        default=list, blank=True, help_text="Regular expressions on the URL path: follow only these"
    )
    exclude = models.JSONField(default=list, blank=True, help_text="Regular expressions on the URL path: never follow")
    revisit_after = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds between runs of a schedule-less job"
    )
    delay = models.FloatField(null=True, blank=True, help_text="Seconds between requests to a server at least")
    concurrency = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Requests in flight to a server at most"
    )
    windows = models.JSONField(default=list, blank=True, help_text='Time windows "HH:MM-HH:MM" in the time zone')
    render = models.CharField(
        max_length=6, blank=True, default="", db_default="", help_text="auto, always or never; empty: CRAWL_RENDER"
    )
    time_zone = models.CharField(max_length=64, default="UTC")
    schedule = models.CharField(max_length=100, blank=True, help_text='Cron, in the time zone, e.g. "0 2 * * *"')
    enabled = models.BooleanField(default=True)
    state = models.CharField(max_length=8, choices=STATES, default=IDLE)
    admitted = models.PositiveIntegerField(default=0, help_text="URLs taken in (counted against max_pages)")
    next_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name

    def in_window(self, now: datetime) -> bool:
        """Whether `now` is inside one of the job's time windows, on its time zone's clock (always, with none)."""
        return windows.in_day_windows(self.windows, now, self.time_zone)

    def window_opens(self, now: datetime) -> datetime | None:
        """The next minute (within a day) at which one of the job's windows is open, on its zone's clock."""
        return windows.day_window_opens(self.windows, now, self.time_zone)

    def next_start(self, after: datetime) -> datetime:
        """The schedule's next start after `after`, on the job's time zone's clock (jobrules.JobRuleError
        when it never comes)."""
        return jobrules.schedule_next(self.schedule, windows.zone_time(after, self.time_zone))


class JobRun(models.Model):
    """One run of a job: when, what it fetched, how it ended."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="runs")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=12, default="manual", help_text="manual, schedule or crawl")
    done_at_start = models.PositiveIntegerField(default=0)
    failed_at_start = models.PositiveIntegerField(default=0)
    pages = models.PositiveIntegerField(default=0, help_text="URLs fetched in the run")
    failures = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=100, blank=True)
    # The time the run spent paused, so its rate (and ETA) counts only the time it was let run.
    paused_at = models.DateTimeField(null=True, blank=True, help_text="Paused since (while paused)")
    paused_seconds = models.FloatField(default=0.0, help_text="Seconds paused before paused_at")
    resumed_at = models.DateTimeField(null=True, blank=True, help_text="Last resumed (its rate is taken since)")
    set_aside = models.PositiveIntegerField(
        default=0, help_text="Queued URLs set aside by the job's patterns edited during the run"
    )
    # Each told once a run: the guarded write that sets one decides who tells it.
    stalled_at = models.DateTimeField(null=True, blank=True, help_text="When the run was told stalled")
    budget_reached_at = models.DateTimeField(null=True, blank=True, help_text="When the run used up max_pages")
    samples = models.JSONField(
        default=list, blank=True, help_text="[seconds since the start, done, queued] now and then (the job's chart)"
    )

    class Meta:
        indexes = [models.Index(fields=["job", "-started_at"], name="jobrun_job_idx")]

    def __str__(self) -> str:
        # The admin's inline rows and log name a run by when it started, not "JobRun object (3)".
        return f"run started {self.started_at:%Y-%m-%d %H:%M:%S %Z} ({self.trigger})"

    def active_seconds(self, now: datetime) -> float:
        """Seconds the run was let run up to `now` (its paused time left out)."""
        end = self.ended_at or now
        paused = self.paused_seconds + ((end - self.paused_at).total_seconds() if self.paused_at else 0.0)
        return max(0.0, (end - self.started_at).total_seconds() - paused)


class JobUrl(models.Model):
    """A URL that a job reached, and how many links from the job's seeds (a seed: 0)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="+", db_index=False)
    url = models.ForeignKey(Url, on_delete=models.CASCADE, related_name="+")
    depth = models.PositiveIntegerField()
    # The URL was in the crawl, due for its own sake, when the job reached it: the job's pause or removal
    # leaves it as it was (crawlcore.services.job_hold.job_hold), for it is not the job's alone.
    joined = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "url"], name="joburl_unique")]
