"""A web server as the crawl knows it: its row (politeness, robots.txt, pinning, rendering decision), the
slots that bound the requests in flight to it, and the sitemaps it publishes. Its health, kept by several
parties, has its own module (crawlcore.models.health)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from crawler.politeness import crawl_delay
from crawler.urlnorm import ServerKey

from ..validate import server_problems


class Server(models.Model):
    """One web server (scheme, host, port): the unit of politeness and of crawler-number pinning."""

    scheme = models.CharField(max_length=12)  # http, https, or a monitor's tcp, dns, heartbeat
    host = models.CharField(max_length=255)
    port = models.PositiveIntegerField()
    ip = models.GenericIPAddressField(null=True, blank=True, help_text="Address last resolved")
    group = models.CharField(max_length=100, blank=True, db_index=True)
    crawler_num = models.PositiveIntegerField(
        null=True, blank=True, db_index=True, help_text="Pin to workers started with this CRAWLER_NUM"
    )
    enabled = models.BooleanField(default=True)
    trusted = models.BooleanField(
        default=False, help_text="Added by an operator: may be crawled even on a private address"
    )
    excluded_reason = models.CharField(max_length=100, blank=True)
    alias_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="aliases",
        help_text="Same IP and same home page as this server: one site under two names (seed 003)",
    )
    crawl_delay = models.FloatField(null=True, blank=True, help_text="Seconds; from robots.txt, capped")
    robots_txt = models.TextField(blank=True)
    robots_kind = models.CharField(max_length=20, blank=True)
    robots_fetched_at = models.DateTimeField(null=True, blank=True)
    sitemaps_read_at = models.DateTimeField(
        null=True, blank=True, help_text="Its sitemaps were last read (claimed) then; Sitemap rows tell what came of it"
    )
    next_request_at = models.DateTimeField(
        null=True, blank=True, help_text="Politeness: the earliest start of the next request, cluster-wide"
    )
    dispatched_at = models.DateTimeField(null=True, blank=True)
    paused_until = models.DateTimeField(
        null=True, blank=True, help_text="Hybrid-Sorting pause (seed 000): its Init URLs wait until this hour"
    )
    load_profile = models.JSONField(
        null=True,
        blank=True,
        help_text="Mean ms per hour of day 0-23 (None: no data); written hourly by the monitor, read by the schedulers",
    )
    load_profile_at = models.DateTimeField(null=True, blank=True)
    # Politeness floors over the global defaults: an operator's, or the strictest of the jobs that reach the
    # server (crawlcore.selectors_jobs.jobs_politeness). robots.txt's Crawl-delay still wins when it asks for more.
    min_delay = models.FloatField(
        null=True, blank=True, help_text="Seconds between requests at least; empty: CRAWL_DEFAULT_DELAY"
    )
    max_concurrency = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Requests in flight at most; empty: CRAWL_SERVER_CONCURRENCY"
    )
    # Who answers for this server: alerts sends its own server's events to owner_email;
    # link reports address the owner by name.
    owner_name = models.CharField(max_length=200, blank=True)
    owner_email = models.EmailField(max_length=254, blank=True, help_text="Gets this server's alerts")
    # Rendering (crawler.render_need.HostDecision): whether this host's pages need a browser, from the pages
    # read in auto mode, sampled (rendered), and how many of those the browser gave more; flagged pages not
    # rendered since the last render (a plain host's re-check).
    render_decision = models.CharField(
        max_length=8,
        blank=True,
        default="",
        db_default="",
        help_text="render: every page; plain: none; empty: sampling",
    )
    render_seen = models.PositiveIntegerField(default=0, db_default=0)
    render_samples = models.PositiveIntegerField(default=0, db_default=0)
    render_gains = models.PositiveIntegerField(default=0, db_default=0)
    render_skipped = models.PositiveIntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scheme", "host", "port"], name="server_unique_origin")]

    def __str__(self) -> str:
        return self.origin

    @property
    def origin(self) -> str:
        """scheme://host[:port], an IPv6 literal in brackets (the host is stored without them)."""
        return ServerKey(self.scheme, self.host, self.port).origin()

    def serves(self, url: str) -> bool:
        """Whether `url` is on this server's own host and port (whatever its scheme): what an operator's trust
        in the server covers. A URL on any other host is guarded like any crawled URL."""
        try:
            parts = urlsplit(url)
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        except ValueError:
            return False
        return (parts.hostname or "").lower() == self.host.strip("[]").lower() and port == self.port

    def request_delay(self) -> float:
        """Seconds between request starts politeness asks for: robots.txt's Crawl-delay (capped) or the
        default, raised by the server's own floor (an operator's). The crawl's pace
        (crawlcore.models.ServerHealth.pace_delay) and a running job (selectors_jobs.jobs_politeness, read
        where requests are paced) may ask for more."""
        delay = crawl_delay(self.crawl_delay, default=settings.CRAWL_DEFAULT_DELAY, cap=settings.CRAWL_MAX_DELAY)
        return max(delay, self.min_delay or 0.0)

    def clean(self) -> None:
        problems = server_problems(
            scheme=self.scheme, host=self.host, port=self.port, group=self.group, crawler_num=self.crawler_num
        )
        if problems:
            raise ValidationError(problems)


class ServerLease(models.Model):
    """One of a server's CRAWL_SERVER_CONCURRENCY slots: a task holds one while it sends requests to the
    server, so at most that many requests are in flight to it across the whole cluster."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="leases")
    slot = models.PositiveSmallIntegerField()
    owner = models.CharField(max_length=200, blank=True)
    # The agent whose visit holds it: the dispatcher counts the load agent's slots as its busy robots.
    agent = models.CharField(max_length=16, blank=True, db_default="")
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "slot"], name="server_lease_unique_slot")]
        indexes = [models.Index(fields=["expires_at"], name="server_lease_expiry_idx", condition=~Q(owner=""))]


class Sitemap(models.Model):
    """One sitemap file of a server as last read: where it was found, what came of it. A bad
    sitemap keeps its error here, and the crawl goes on without it."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="sitemaps")
    url = models.TextField()
    source = models.CharField(max_length=12, help_text="robots, default (/sitemap.xml) or index")
    kind = models.CharField(max_length=8, blank=True, help_text="urlset, index or text")
    fetched_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    urls_listed = models.PositiveIntegerField(default=0)
    urls_added = models.PositiveIntegerField(default=0, help_text="New URLs within the crawl's scope")
    error = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "url"], name="sitemap_unique_url")]

    def __str__(self) -> str:
        return self.url
