"""Freshness objectives: how stale an objective's pages may be at the 95th percentile, within a
request budget per server and day, and the hourly record of whether the target held (the share of hours met
over 30 days, the burn alerts). The arithmetic is scheduling.freshness; the writes crawlcore.services.freshness."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from scheduling.freshness import PagesError, pages_parse

from .jobs import Job
from .servers import Server


class FreshnessObjective(models.Model):
    """An objective for one site (a server's origin) or one job: which pages, the p95 staleness allowed and
    the requests per server and day it may spend."""

    name = models.CharField(max_length=100, unique=True)
    site = models.ForeignKey(
        Server, null=True, blank=True, on_delete=models.CASCADE, related_name="freshness_objectives",
        help_text="The site whose pages it covers (or a job)",
    )  # fmt: skip
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.CASCADE, related_name="freshness_objectives",
        help_text="The job whose pages it covers (or a site)",
    )  # fmt: skip
    pages = models.CharField(
        max_length=500, default="all", help_text="all, top:N (the N best by rank) or a regular expression on the path"
    )
    target = models.PositiveIntegerField(help_text="Seconds: the p95 staleness allowed")
    budget = models.PositiveIntegerField(help_text="Requests per server and day, at most")
    # Whether its burn alert is raised (alerts.services.freshness_events flips it with one guarded write).
    burning = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(site__isnull=True, job__isnull=False) | Q(site__isnull=False, job__isnull=True),
                name="freshness_site_or_job",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """One site or one job; pages all, top:N or a path regex; a target and a budget of at least 1."""
        errors = {}
        if (self.site_id is None) == (self.job_id is None):
            errors["site"] = "an objective is for one site or one job"
        try:
            pages_parse(self.pages)
        except PagesError as exc:
            errors["pages"] = str(exc)
        if self.target is not None and self.target < 1:
            errors["target"] = "at least 1 second"
        if self.budget is not None and self.budget < 1:
            errors["budget"] = "at least 1 request a day"
        if errors:
            raise ValidationError(errors)

    @property
    def scope_name(self) -> str:
        """The site's origin, or `job NAME`."""
        return self.site.origin if self.site_id else f"job {self.job.name}"


class FreshnessHour(models.Model):
    """One hour of an objective: its p50/p95 staleness then and whether the target held (written once an
    hour by crawlcore.services.freshness.freshness_record; the hour is its start)."""

    objective = models.ForeignKey(FreshnessObjective, on_delete=models.CASCADE, related_name="hours")
    hour = models.DateTimeField()
    p50 = models.FloatField(null=True, blank=True)
    p95 = models.FloatField(null=True, blank=True)
    met = models.BooleanField()
    pages = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["objective", "hour"], name="freshness_hour_unique")]


class LastmodTally(models.Model):
    """What a server's sitemap lastmod said against what its pages' checks found (scheduling.freshness.
    lastmod_honesty reads the four counts): an active-scan check of a page whose lastmod was newer than its
    last check is an announced change, confirmed when the check found the page changed; a check that found
    a change is a found change, foretold when lastmod had announced it."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="lastmod_tally")
    announced = models.PositiveIntegerField(default=0)
    confirmed = models.PositiveIntegerField(default=0)
    found = models.PositiveIntegerField(default=0)
    foretold = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)


class IndexNowSite(models.Model):
    """A server's IndexNow state (crawlcore.services.indexnow): the key its key file was last found to hold,
    and the pushes counted in the current rate-limit window (one guarded UPDATE a push)."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="indexnow")
    key = models.CharField(max_length=128, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    window_at = models.DateTimeField(null=True, blank=True)
    window_count = models.PositiveIntegerField(default=0)
