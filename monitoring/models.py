"""Monitoring state next to crawladmin's Server: per-server settings and confirmed status, the status
timeline, hourly rollups and maintenance windows. The raw checks are crawladmin's StatusCheck rows
with agent="monitor".
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from crawlcore.models import Server, StatusCheck
from crawler.status import CONFIRMED, Status

from .validate import monitor_problems

# Only confirmed statuses are stored: maintenance and unmonitored are shown, never written here.
STATUS_CHOICES = [(s.value, s.value.title()) for s in CONFIRMED]


class ServerMonitor(models.Model):
    """How one server is monitored and where it stands. Empty settings fall back to MONITOR_* defaults."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="monitor")
    enabled = models.BooleanField(default=True)
    health_url = models.TextField(blank=True, help_text="Empty: the server's home page")
    interval_s = models.FloatField(null=True, blank=True, help_text="Seconds between checks; empty: MONITOR_INTERVAL")
    delay_threshold_s = models.FloatField(
        null=True, blank=True, help_text="A slower valid answer is a delay; empty: MONITOR_DELAY_THRESHOLD"
    )
    accepted_codes = models.CharField(max_length=200, blank=True, help_text="e.g. 200,301-302; empty: any 2xx/3xx")
    fail_after = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: MONITOR_FAIL_AFTER")
    recover_after = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: MONITOR_RECOVER_AFTER")
    # Confirmation state (monitoring.confirm.Confirmation) and the schedule; written only by monitoring services.
    status = models.CharField(max_length=12, choices=STATUS_CHOICES, default=Status.UNKNOWN.value)
    status_since = models.DateTimeField(null=True, blank=True)
    candidate = models.CharField(max_length=12, blank=True)
    streak = models.PositiveIntegerField(default=0)
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_category = models.CharField(max_length=12, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(max_length=64, blank=True)

    class Meta:
        indexes = [models.Index(fields=["enabled", "next_check_at"], name="monitor_due_idx")]

    def __str__(self) -> str:
        return f"monitor of {self.server_id}"

    def clean(self) -> None:
        problems = monitor_problems(
            health_url=self.health_url,
            interval_s=self.interval_s,
            delay_threshold_s=self.delay_threshold_s,
            accepted_codes=self.accepted_codes,
            fail_after=self.fail_after,
            recover_after=self.recover_after,
        )
        if problems:
            raise ValidationError(problems)


class StatusChange(models.Model):
    """One confirmed change of a server's status: the status timeline."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="status_changes")
    from_status = models.CharField(max_length=12, choices=STATUS_CHOICES)
    to_status = models.CharField(max_length=12, choices=STATUS_CHOICES)
    at = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)
    status_check = models.ForeignKey(StatusCheck, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["server", "at"], name="change_server_time_idx")]


class HourlyRollup(models.Model):
    """Checks of one server in one hour: counts per category and latency of the answered ones."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="hourly_rollups")
    hour = models.DateTimeField(help_text="Start of the hour (UTC)")
    normal = models.PositiveIntegerField(default=0)
    delay = models.PositiveIntegerField(default=0)
    disconnect = models.PositiveIntegerField(default=0)
    error = models.PositiveIntegerField(default=0)
    maintenance = models.PositiveIntegerField(default=0)
    timed = models.PositiveIntegerField(default=0, help_text="Answered checks behind the latency figures")
    latency_min_ms = models.FloatField(null=True, blank=True)
    latency_mean_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    latency_max_ms = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "hour"], name="rollup_unique_server_hour")]
        indexes = [models.Index(fields=["hour"], name="rollup_hour_idx")]


class MaintenanceWindow(models.Model):
    """Planned downtime: checks inside it show as maintenance and are left out of uptime."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="maintenance_windows")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [models.Index(fields=["server", "starts_at"], name="maint_server_start_idx")]
        constraints = [
            models.CheckConstraint(condition=models.Q(ends_at__gt=models.F("starts_at")), name="maint_ends_after_start")
        ]
