"""The record of requests: every request and its outcome (StatusCheck, the raw material of monitoring), and the
exchanges kept for the archive where no page row holds them (Exchange)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from crawler.lifecycle import Agent
from crawler.status import Category

from .choices import enum_choices
from .servers import Server
from .urls import Url


class StatusCheck(models.Model):
    """One HTTP request and what came of it: the raw material of monitoring.

    The crawl's agents write the row in two steps, so a request is never lost from the record: an intent
    row in category PENDING, committed before the request is sent, then the outcome written over it. A
    row whose outcome never came (the worker was killed, the database went away) is finished by the
    reconciler as INTERRUPTED. Neither is something the server did: both are left out of every
    statistic about servers (NOT_SERVER_ANSWERS).

    On PostgreSQL the table is partitioned by range of checked_at (migration 0013, crawlcore.db.partitions):
    its database primary key is (id, checked_at), `id` still unique through its identity sequence and the
    primary key Django uses; nothing references it with a database foreign key; retention drops whole
    partitions (crawlcore.services.check_history). A read that knows the time should filter on checked_at,
    so only the partitions of that time are read."""

    PENDING = "pending"
    INTERRUPTED = "interrupted"
    NOT_SERVER_ANSWERS = (PENDING, INTERRUPTED)

    url = models.ForeignKey(Url, null=True, blank=True, on_delete=models.SET_NULL, related_name="checks")
    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="checks")
    requested_url = models.TextField(help_text="What was requested (robots.txt checks have no Url row)")
    method = models.CharField(max_length=8, default="GET")
    checked_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    category = models.CharField(
        max_length=12, choices=enum_choices(Category) + [(PENDING, "Pending"), (INTERRUPTED, "Interrupted")]
    )
    failure_kind = models.CharField(max_length=32, blank=True)
    detail = models.CharField(max_length=300, blank=True)
    latency_ms = models.FloatField()
    dns_ms = models.FloatField(null=True, blank=True)
    connect_ms = models.FloatField(null=True, blank=True)
    first_byte_ms = models.FloatField(null=True, blank=True)
    body_ms = models.FloatField(null=True, blank=True)
    bytes = models.PositiveIntegerField(default=0)
    agent = models.CharField(max_length=16, choices=enum_choices(Agent))
    crawler_num = models.PositiveIntegerField(null=True, blank=True)
    # How many requests this check took: the monitor tries a disconnect or delay again within its round
    # (MONITOR_RETRIES) and records the last try once. A database default too, so raw inserts need not name it.
    tries = models.PositiveSmallIntegerField(default=1, db_default=1)

    class Meta:
        indexes = [
            models.Index(fields=["server", "checked_at"], name="check_server_time_idx"),
            # The reconciler looks only at requests still waiting for their outcome.
            models.Index(fields=["checked_at"], name="check_pending_idx", condition=Q(category="pending")),
            # The active sweep's throughput by server and hour of day (crawlcore.services.recrawl_choice) reads
            # the GETs with a body of the last CRAWL_THROUGHPUT_DAYS every period: a range of this index,
            # and on PostgreSQL an index-only scan (the columns it sums are included).
            models.Index(
                fields=["checked_at"],
                name="check_get_throughput_idx",
                condition=Q(method="GET", bytes__gt=0, latency_ms__gt=0),
                include=["server", "bytes", "latency_ms", "category"],
            ),
        ]


class Exchange(models.Model):
    """A request and its answer kept for the archive where no Page row holds them: a redirect, a 4xx or 5xx
    answer (its body bounded as a page's is), a resource's check, a robots.txt or sitemap fetch. One row per
    such request, appended as it is recorded; a 2xx page keeps its exchange on its Page row instead, so the
    plain pages of the load path write nothing here. ARCHIVE_KEEP_ERROR_BODIES_DAYS drops old bodies, the
    heads stay."""

    PAGE, ROBOTS, SITEMAP = "page", "robots", "sitemap"
    # The monitor's check whose answer is an incident's evidence (monitoring.services.evidence): kept, and
    # removed, with the evidence (EVIDENCE_RETENTION_DAYS), not by the error bodies' retention.
    MONITOR = "monitor"

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="+", db_index=False)
    # SET_NULL through the ORM only: the row outlives nothing it needs from the URL but its text.
    url = models.ForeignKey(
        Url, null=True, blank=True, on_delete=models.SET_NULL, related_name="exchanges", db_constraint=False
    )
    requested_url = models.TextField()
    kind = models.CharField(max_length=8, default=PAGE, help_text="page, robots, sitemap or monitor")
    method = models.CharField(max_length=8, default="GET")
    fetched_at = models.DateTimeField()
    status = models.PositiveSmallIntegerField()
    request_head = models.TextField(blank=True)
    response_head = models.TextField(blank=True)
    peer_ip = models.GenericIPAddressField(null=True, blank=True)
    body_z = models.BinaryField(blank=True, help_text="zlib-compressed body; empty once dropped by retention")
    size = models.PositiveIntegerField(default=0, help_text="Body bytes before compression")
    checksum = models.CharField(max_length=40, blank=True, help_text="sha1 of the body ('' when empty)")
    # WARC-Truncated's word for a body not kept whole: length (the body limit), time (the body deadline),
    # disconnect (reset, undecodable); empty when whole.
    truncated = models.CharField(max_length=12, blank=True)
    body_dropped_at = models.DateTimeField(null=True, blank=True, help_text="When retention removed the body")

    class Meta:
        indexes = [
            models.Index(fields=["server", "fetched_at"], name="exchange_server_time_idx"),
            models.Index(fields=["fetched_at"], name="exchange_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.status} {self.requested_url}"
