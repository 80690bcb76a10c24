"""A server's health as one row written by one service and read by one selector, each party (monitor, crawl,
robots.txt, operator) in its own columns, and the history of its summary the server page shows."""

from __future__ import annotations

from django.db import models

from .servers import Server


class ServerHealth(models.Model):
    """What the monitor, the crawl, robots.txt and the operator know of a server's health, in one row that
    only crawlcore.services.health writes and crawlcore.selectors_health reads (the rules:
    crawler.hosthealth). No row: nothing is known against the server, it is healthy.

    Each party writes its own columns, so one's news never erases another's (an operator's resume leaves
    the monitor's outage standing); `state` … `until` are the summary the last write derived from them all."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="health")
    # The summary, as of the last write (readers derive it afresh: a hold may have lapsed since).
    state = models.CharField(max_length=16, default="healthy", db_index=True)
    source = models.CharField(max_length=12, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    since = models.DateTimeField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)
    # operator
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_until = models.DateTimeField(null=True, blank=True)
    paused_by = models.CharField(max_length=150, blank=True)
    pause_note = models.CharField(max_length=200, blank=True)
    # monitor: its confirmed outage
    down_since = models.DateTimeField(null=True, blank=True)
    down_reason = models.CharField(max_length=200, blank=True)
    # robots.txt answered 5xx or not at all
    robots_since = models.DateTimeField(null=True, blank=True)
    robots_reason = models.CharField(max_length=200, blank=True)
    # While down or robots-held: one probe request per window, the window doubling on each failed probe.
    probe_at = models.DateTimeField(null=True, blank=True)
    probe_strikes = models.PositiveIntegerField(default=0)
    # crawl: 429 / 503 back-off (strikes: repeats, forgiven after quiet minutes)
    limited_at = models.DateTimeField(null=True, blank=True)
    limited_until = models.DateTimeField(null=True, blank=True, db_index=True)
    limited_reason = models.CharField(max_length=200, blank=True)
    limited_status = models.PositiveSmallIntegerField(null=True, blank=True)
    limited_asked = models.BooleanField(default=False, help_text="The wait was the server's own Retry-After")
    strikes = models.PositiveIntegerField(default=0)
    # crawl: the pace its answers ask for (p95 response time, share of failures over the last answers)
    window = models.JSONField(default=list, blank=True, help_text="Last answers' ms, null for a failure")
    pace_delay = models.FloatField(default=0.0)
    error_floor = models.FloatField(default=0.0)
    p95_ms = models.FloatField(null=True, blank=True)
    error_share = models.FloatField(default=0.0)
    paced_since = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"health of {self.server_id}: {self.state}"


class ServerHealthEvent(models.Model):
    """A change of a server's health summary: the history the server page shows."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="health_events")
    at = models.DateTimeField()
    state = models.CharField(max_length=16)
    source = models.CharField(max_length=12, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["server", "-at"], name="health_event_server_at")]
