"""What the link reports remember: each broken link and since when (LinkBreak), and each digest sent.

"First seen broken" lives here, on LinkBreak: the time the report first found the link broken (refreshed
every five minutes on beat, and before every export and digest), kept while it stays broken. A link that
is fixed keeps its row with `fixed_at`, so a digest can say what was fixed; broken again, the row
starts over.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from crawlcore.models import Server, Url

# Derived rows: no foreign-key constraints (nothing here may slow or block the crawl's writes or deletes).
_DERIVED = {"on_delete": models.DO_NOTHING, "db_constraint": False, "db_index": False}


class LinkBreak(models.Model):
    site = models.ForeignKey(Server, related_name="+", help_text="The server of the page carrying the link", **_DERIVED)
    from_url = models.ForeignKey(Url, related_name="+", **_DERIVED)
    to_url = models.ForeignKey(Url, related_name="+", **_DERIVED)
    anchor_text = models.CharField(max_length=200, blank=True, help_text="Copied from the link row")
    element = models.CharField(max_length=12, blank=True, help_text="Copied from the link row")
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="HTTP status of the URL that failed")
    failure_kind = models.CharField(max_length=40, blank=True)
    redirect_chain = models.TextField(blank=True)
    first_broken_at = models.DateTimeField()
    last_checked_at = models.DateTimeField(null=True, blank=True, help_text="The target's last check")
    fixed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["from_url", "to_url"], name="linkbreak_unique")]
        indexes = [
            # The export and the site report: a site's open breaks by page, then target.
            models.Index(fields=["site", "from_url", "to_url"], name="linkbreak_open_idx", condition=Q(fixed_at=None)),
            models.Index(fields=["fixed_at"], name="linkbreak_fixed_idx", condition=~Q(fixed_at=None)),
            # The incremental refresh: the open breaks of the targets that changed.
            models.Index(fields=["to_url"], name="linkbreak_open_target_idx", condition=Q(fixed_at=None)),
        ]


class LinkBreakRefresh(models.Model):
    """Where the refresh of LinkBreak left off (one row): the crawl's change records it has read, so the next
    refresh reads only what came after (reports.services.link_breaks_refresh).

    `marks`: [time, newest UrlEvent id, newest Link id] taken at the start of recent refreshes; ids are handed
    out before their transaction commits, so a refresh reads on from a mark taken a while before the
    previous refresh, not from the previous refresh's own. `pending`: URLs the previous refresh looked at
    whose page was still waiting for the extract agent, with links by #fragment pointing at them: their
    anchors come later, without a record of their own, so they are looked at again until extracted.
    `rules`: the settings the record depends on; a change of them makes the next refresh a full one."""

    full_at = models.DateTimeField(null=True, blank=True, help_text="The last full recompute")
    refreshed_at = models.DateTimeField(null=True, blank=True)
    marks = models.JSONField(default=list)
    pending = models.JSONField(default=list)
    rules = models.CharField(max_length=100, blank=True)


class Digest(models.Model):
    """One digest sent to one owner: to whom, what (counts and the text), when and how."""

    owner_email = models.CharField(max_length=254, blank=True)
    owner_name = models.CharField(max_length=200, blank=True)
    sites = models.JSONField(default=list, help_text="Origins covered")
    broken = models.PositiveIntegerField(default=0)
    fixed = models.PositiveIntegerField(default=0)
    since = models.DateTimeField(null=True, blank=True, help_text="The previous digest to this owner")
    sent_at = models.DateTimeField()
    channel = models.CharField(max_length=20, help_text="email, or file")
    destination = models.CharField(max_length=500, blank=True, help_text="Address or file path")
    body = models.TextField()

    class Meta:
        indexes = [models.Index(fields=["owner_email", "sent_at"], name="digest_owner_idx")]


class SlaReportSent(models.Model):
    """One owner's monthly uptime / SLA report, sent once (the unique month and owner make a second run of
    the monthly job send nothing again)."""

    owner_email = models.CharField(max_length=254)
    month = models.CharField(max_length=7, help_text="YYYY-MM")
    sent_at = models.DateTimeField()
    channel = models.CharField(max_length=20, help_text="email, or file")
    destination = models.CharField(max_length=500, blank=True)
    body = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner_email", "month"], name="sla_report_once")]
