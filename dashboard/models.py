"""What the dashboard precomputes so its pages never scan a big table per request (dashboard.rollups
writes both; dashboard.selectors_* read them).

- Snapshot: one named set of figures (JSON) and when it was computed: counts that take seconds over
  millions of rows, shared by every web process and machine, recomputed by beat or by the first reader
  that finds them older than it accepts.
- ServerRollup: one server's URLs by state, its failing URLs and its failed checks by failure kind, its
  checks per uptime window: what its page would otherwise count over the server's thousands of URLs,
  checks and hourly rollups on every view.
- CrawlSample: the crawl's URLs by state at one moment, kept each time those counts are computed (beat
  every minute, the crawl command as it runs): the crawl page's "URLs by state over time".
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from crawlcore.models import Server


class Snapshot(models.Model):
    name = models.CharField(max_length=100, primary_key=True)
    data = models.JSONField()
    computed_at = models.DateTimeField(help_text="When the computation started: the figures are as of then")
    seconds = models.FloatField(default=0.0, help_text="How long computing them took")

    def __str__(self) -> str:
        return f"{self.name} as of {self.computed_at:%Y-%m-%d %H:%M:%S}"


# A derived table: no foreign-key constraints (nothing here may slow or block the crawl's own writes or
# deletes; rows of deleted URLs drop out at the next refresh), and only the indexes the reads need.
_DERIVED = {"on_delete": models.DO_NOTHING, "db_constraint": False, "db_index": False}


class ServerRollup(models.Model):
    server = models.OneToOneField(Server, primary_key=True, related_name="+", **_DERIVED)
    url_states = models.JSONField(default=dict, help_text="URLs by state (excluded ones too)")
    failing_url_kinds = models.JSONField(default=list, help_text="[kind, URLs] of its failing URLs, most first")
    check_failure_kinds = models.JSONField(default=list, help_text="[kind, checks] over check_days, most first")
    check_days = models.PositiveSmallIntegerField(default=7)
    uptime_counts = models.JSONField(default=dict, help_text="Per uptime window: checks by category, from rollups")
    computed_at = models.DateTimeField()


class CrawlSample(models.Model):
    at = models.DateTimeField(db_index=True, help_text="When the counts were taken")
    states = models.JSONField(help_text="URLs by state, excluded ones apart: {state: URLs}")
    excluded = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["at"]

    def __str__(self) -> str:
        return f"crawl sample {self.at:%Y-%m-%d %H:%M:%S}"


class StatusPage(models.Model):
    """A public, read-only status page of one server group (/status/<slug>/), for the people who use those
    servers: opt-in (none exists until an operator adds one), no login, nothing private on it: each
    server is shown by its host name only unless `show_addresses` is set."""

    slug = models.SlugField(max_length=60, unique=True, help_text="The page's address: /status/<slug>/")
    group = models.CharField(max_length=100, help_text="The server group it shows (Server.group)")
    title = models.CharField(max_length=200, blank=True, help_text="Empty: the group's name")
    enabled = models.BooleanField(default=True)
    show_addresses = models.BooleanField(
        default=False, help_text="Show each server's full origin (scheme and port) and link to it; off: host names only"
    )

    def __str__(self) -> str:
        return f"status page {self.slug} ({self.group})"


class SignOnIdentity(models.Model):
    """Who a single sign-on subject is here (crawladmin.sso): the provider's `sub` claim, stored at the user's
    first login and the only thing a later login is matched by. An e-mail address can be claimed by anyone
    at many providers; a subject is the provider's own name for one account."""

    subject = models.CharField(max_length=255, unique=True)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_on")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.subject} -> {self.user_id}"


class ApiToken(models.Model):
    """A user's token for the REST API (`Authorization: Bearer <token>`): it acts as its user, with the
    user's groups. Only its SHA-256 is kept (a token is 256 random bits, so a plain hash is as good as a
    slow one and lets a request find its row by one index lookup); the token itself is shown once, when it
    is made (`manage.py api_token USER`, or the admin)."""

    PREFIX = "ca_"

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="What it is for")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    shown = models.CharField(max_length=12, editable=False, help_text="The token's first characters, to tell it apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self) -> str:
        return f"{self.shown}… ({self.user})"
