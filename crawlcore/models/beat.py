"""The timing of the periodic (beat) tasks, one row a task: kept so a task that outlasts its period is seen
(the dashboard, /metrics, the worker's log, alerts) rather than silently falling behind."""

from __future__ import annotations

from django.db import models


class BeatJobRun(models.Model):
    """How long each beat job took, one row a job (crawlcore.beat's table names them): its last run and its
    worst, and how often a run outlasted the job's period. A job that takes longer than its period falls
    behind: the dashboard's crawl page and /metrics show it, the worker logs a warning, and alerts tells it (an
    event of kind beat, through the hook of crawlcore.services.beat_runs)."""

    name = models.CharField(max_length=200, unique=True, help_text="The beat job's name (crawlcore.beat)")
    task = models.CharField(max_length=200)
    period_seconds = models.PositiveIntegerField(help_text="How often beat sends it")
    last_started_at = models.DateTimeField()
    last_seconds = models.FloatField()
    last_ok = models.BooleanField(default=True, help_text="False: the last run raised")
    max_seconds = models.FloatField(default=0.0)
    runs = models.PositiveBigIntegerField(default=0)
    over_period = models.PositiveBigIntegerField(default=0, help_text="Runs that took longer than the period")

    def __str__(self) -> str:
        return f"{self.name}: {self.last_seconds:.2f} s of {self.period_seconds} s"

    @property
    def late(self) -> bool:
        return self.last_seconds > self.period_seconds
