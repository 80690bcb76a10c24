"""Alerts' durable state: channels, routing rules, events and the outbox (one Notification row per
event and channel), in the healthchecks manner: the change is a row, its delivery is a row a sender claims.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from crawlcore.models import Server

from .destinations import (
    Destination,
    DestinationError,
    allowed_networks,
    destination_parse,
    destination_refusal,
    lookup_within,
)
from .logic import KindsError, kinds_parse
from .recurrence import MAX_DURATION, ScheduleError, cron_of


def owner_destination(email: str) -> str:
    """The destination of the channel made for a server owner's address."""
    return f"email:{email}"


class Channel(models.Model):
    """A named destination: an Apprise URL or e-mail addresses (alerts.destinations)."""

    name = models.CharField(max_length=100, unique=True)
    url = models.TextField(help_text="An Apprise URL (json://, slack://, mailto:// ...) or e-mail addresses")
    enabled = models.BooleanField(default=True)
    owner_of = models.EmailField(
        blank=True, help_text="Made for a server owner's contact address; servers' own events go to it"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        try:
            dest = destination_parse(self.url)
        except DestinationError as exc:
            raise ValidationError({"url": str(exc)}) from None
        if dest.kind == "email" and not settings.EMAIL_HOST:
            raise ValidationError({"url": "plain e-mail is sent through EMAIL_HOST, which is not set"})
        refused = destination_refusal(
            dest, allowed_networks(settings.ALERTS_ALLOW_PRIVATE), lookup=lookup_within(settings.CRAWL_DNS_TIMEOUT)
        )
        if refused:
            raise ValidationError({"url": refused})
        self.url = dest.url
        if self.owner_of and self.url != owner_destination(self.owner_of):
            # The outbox sends an owner's events to the channel marked theirs: marked on any other destination,
            # it would take them (alerts.services.outbox._owner_channels trusts only the owner's own address).
            raise ValidationError({"owner_of": f"an owner's channel mails that address: its destination is "
                                               f"{owner_destination(self.owner_of)}"})  # fmt: skip

    def save(self, *args, **kwargs) -> None:
        # Every path that writes a channel (admin, command, service, shell) gets the same check.
        self.clean()
        super().save(*args, **kwargs)

    @property
    def destination(self) -> Destination:
        return destination_parse(self.url)

    @property
    def masked(self) -> str:
        try:
            return self.destination.masked()
        except DestinationError:
            return "(invalid destination)"


class Rule(models.Model):
    """Route these event kinds of all servers, one group, or one server to a channel."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="rules")
    kinds = models.CharField(max_length=200, default="down,up,delay,cert,content", help_text="Comma list")
    group = models.CharField(max_length=100, blank=True, help_text="Only servers (and crawl jobs) of this group")
    server = models.ForeignKey(Server, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    job = models.CharField(max_length=100, blank=True, default="", help_text="Only this crawl job's events")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(group="") | Q(server__isnull=True), name="alert_rule_group_or_server")
        ]

    def __str__(self) -> str:
        scope = f"server {self.server}" if self.server_id else (f"group {self.group}" if self.group else "all")
        if self.job:
            scope = f"job {self.job}"
        return f"{self.kinds} of {scope} -> {self.channel}"

    def clean(self) -> None:
        try:
            self.kinds = ",".join(kinds_parse(self.kinds))
        except KindsError as exc:
            raise ValidationError({"kinds": str(exc)}) from None
        if self.group and self.server_id:
            raise ValidationError("a rule is for a group or for one server, not both")
        if self.job and (self.group or self.server_id):
            raise ValidationError("a rule is for one crawl job, a group or one server")


class Event(models.Model):
    """Something to tell: a confirmed down / delay / recovered, a certificate or content finding, a test."""

    kind = models.CharField(max_length=24)
    server = models.ForeignKey(Server, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    once_key = models.CharField(
        max_length=100, null=True, blank=True, unique=True, help_text="Told once: a crawl job run's event"
    )
    status_change_id = models.BigIntegerField(null=True, blank=True, unique=True, help_text="monitoring's StatusChange")
    at = models.DateTimeField()
    from_status = models.CharField(max_length=12, blank=True)
    to_status = models.CharField(max_length=12, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    locations = models.JSONField(default=dict, blank=True, help_text="Crawler number -> what it saw")
    subject = models.CharField(
        max_length=200, blank=True, db_default="", help_text="What an event of no server is about (a beat job)"
    )

    class Meta:
        indexes = [models.Index(fields=["server", "at"], name="alert_event_server_at_idx")]


class BeatJobAlert(models.Model):
    """Whether a beat job's alert is raised: one row a job, flipped by one guarded write when a run outlasts
    the job's period (late) and when one fits in it again, so each flip is told once however many workers
    record runs of the job (alerts.services.beat_jobs)."""

    name = models.CharField(max_length=200, unique=True, help_text="The beat job's name (crawlcore.beat)")
    late = models.BooleanField(default=False)
    since = models.DateTimeField(help_text="Late, or on time, since")


class Notification(models.Model):
    """The outbox: one row per (event, channel). pending -> sending (claimed) -> sent, or back to pending
    with a later next_attempt_at, or failed once the attempts are spent."""

    PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"
    STATUS_CHOICES = [(s, s) for s in (PENDING, SENDING, SENT, FAILED)]

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="notifications")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="notifications")
    server = models.ForeignKey(
        Server, null=True, blank=True, on_delete=models.CASCADE, related_name="+", help_text="The event's, for the logs"
    )
    status = models.CharField(max_length=8, choices=STATUS_CHOICES, default=PENDING)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField(help_text="Not sent before (grouping window, back-off)")
    attempts = models.PositiveSmallIntegerField(default=0)
    claim_token = models.CharField(max_length=32, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    message_key = models.CharField(
        max_length=32, blank=True, help_text="Idempotency key of the message carrying it, kept across retries"
    )
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["event", "channel"], name="alert_notification_once")]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="alert_outbox_due_idx"),
            models.Index(fields=["server", "created_at"], name="alert_outbox_server_idx"),
            models.Index(fields=["channel", "status"], name="alert_outbox_channel_idx"),
        ]


class Mute(models.Model):
    """ "Mute for ...": no notifications for one server or a whole group until a time. Checks go on and
    statuses still change; the events are kept, only not sent."""

    server = models.ForeignKey(Server, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=100, blank=True)
    until = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(group="") & Q(server__isnull=False)) | (~Q(group="") & Q(server__isnull=True)),
                name="alert_mute_group_xor_server",
            )
        ]

    def __str__(self) -> str:
        return f"mute {self.server or 'group ' + self.group} until {self.until:%Y-%m-%d %H:%M}"


class MaintenanceSchedule(models.Model):
    """A recurring maintenance window for a server or a group: a cron expression (or "sun 02:00") and a
    duration. Its windows are written ahead as monitoring's MaintenanceWindow rows, so checks inside them
    are recorded as maintenance, left out of uptime, and change no status (so alert no one)."""

    server = models.ForeignKey(Server, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=100, blank=True)
    schedule = models.CharField(max_length=100, help_text="Cron (UTC), e.g. '0 2 * * 0', or weekly: 'sun 02:00'")
    duration_minutes = models.PositiveIntegerField()
    reason = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(group="") & Q(server__isnull=False)) | (~Q(group="") & Q(server__isnull=True)),
                name="alert_maint_group_xor_server",
            )
        ]

    def __str__(self) -> str:
        return f"{self.schedule} for {self.duration_minutes} min, {self.server or 'group ' + self.group}"

    def clean(self) -> None:
        try:
            cron_of(self.schedule)
        except ScheduleError as exc:
            raise ValidationError({"schedule": str(exc)}) from None
        if not 0 < (self.duration_minutes or 0) <= MAX_DURATION.total_seconds() / 60:
            raise ValidationError({"duration_minutes": "a maintenance window lasts more than 0 and at most 7 days"})
        if bool(self.group) == bool(self.server_id):
            raise ValidationError("a schedule is for one server or one group")
