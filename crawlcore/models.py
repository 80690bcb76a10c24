"""The durable state of a crawl. PostgreSQL (or SQLite embedded) is the single source of truth:
every unit of work is a row, claimed with a lease, so a lost message or a killed worker loses nothing.
"""

from __future__ import annotations

import zlib
from datetime import datetime
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from crawler.lifecycle import Agent, State
from crawler.politeness import crawl_delay
from crawler.status import Category
from crawler.urlnorm import ServerKey

from .validate import server_problems


def _choices(enum_cls) -> list[tuple[str, str]]:
    return [(member.value, member.name.replace("_", " ").title()) for member in enum_cls]


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
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="aliases",
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
        null=True, blank=True,
        help_text="Mean ms per hour of day 0-23 (None: no data); written hourly by the monitor, read by the schedulers",
    )
    load_profile_at = models.DateTimeField(null=True, blank=True)
    # Politeness floors over the global defaults: an operator's, or the strictest of the jobs that reach the
    # server (crawlcore.services.jobs). robots.txt's Crawl-delay still wins when it asks for more.
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
        max_length=8, blank=True, default="", db_default="",
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


class Url(models.Model):
    """A known URL and where it stands in the life-cycle."""

    url = models.TextField()
    # Unique through Meta.constraints, not unique=True: that would add a second (LIKE) index on PostgreSQL.
    # crawler.urlnorm.url_hash: digests of the URL's server and directory, then of itself (a server's URLs together
    # in the index, and a key a quarter of the URL prefix and sha1 it was until migration 0026).
    url_hash = models.CharField(
        max_length=24, help_text="Base64 of digests of the canonical URL's origin, first directory and whole"
    )
    # Not indexed alone: url_claim_idx starts with it. No database-level foreign key, as on Link: its check is
    # one trigger query a new URL at commit, hundreds an extract batch, each locking the server's row (a
    # server's URLs still go with it: the ORM cascades the delete), ~10 % of a batch's URL insert.
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, related_name="urls", db_index=False, db_constraint=False
    )
    state = models.CharField(max_length=12, choices=_choices(State), default=State.INIT.value)
    depth = models.PositiveIntegerField(default=0)
    redirect_hops = models.PositiveSmallIntegerField(default=0)
    redirect_to = models.TextField(blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    etag = models.CharField(max_length=200, blank=True)
    content_length = models.BigIntegerField(null=True, blank=True)
    checksum = models.CharField(max_length=40, blank=True)
    failure_count = models.PositiveIntegerField(default=0)
    failure_kind = models.CharField(max_length=32, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never due (excluded or final)")
    last_checked_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    exclusion_reason = models.CharField(max_length=100, blank=True)
    scope_mode = models.CharField(max_length=6, default="any", help_text="host, domain or any (from its seed)")
    scope_root = models.CharField(max_length=255, blank=True, help_text="The seed's host or registered domain")
    offsite_hops = models.PositiveSmallIntegerField(default=0)
    resource = models.BooleanField(
        db_default=False,
        help_text="An image, stylesheet or script of a page: checked (HEAD, GET when HEAD is refused), "
        "never stored or parsed",
    )
    # What the server's sitemaps say of this URL: lastmod is a change signal for the recrawl (a
    # lastmod newer than the last fetch makes it due for the active scan); in_sitemap marks URLs a sitemap
    # listed, an orphan being one of them that no page links to (selectors.urls_orphaned).
    in_sitemap = models.BooleanField(default=False)
    sitemap_lastmod = models.DateTimeField(null=True, blank=True)
    sitemap_changefreq = models.CharField(max_length=8, blank=True)
    sitemap_priority = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # The claim: due work of one server in one state.
            models.Index(fields=["server", "state", "next_check_at"], name="url_claim_idx"),
            # The claim's order (shallowest first): read in order, the claim stops after its batch instead of
            # fetching and sorting every due URL of the server (thousands of scattered rows a server in a
            # frontier of millions). Neither index holds a lease column, so a claim stays HOT.
            models.Index(fields=["server", "state", "depth", "id"], name="url_claim_order_idx"),
            # Sweeps across servers (dispatcher, inactive scan).
            models.Index(fields=["state", "next_check_at"], name="url_due_idx"),
            # No index on the lease columns, on purpose: a claim then changes no indexed column, so PostgreSQL
            # updates the 1,000 rows of a claim in place (HOT; the table keeps free space for it, see
            # migration 0007) instead of adding an entry to every index for each row: ~60 -> ~20 ms. The
            # reconciler's look for expired leases, every 30 s, scans the table instead.
            # The active scan's staleness choice walks Visited URLs oldest check first.
            models.Index(fields=["last_checked_at"], name="url_visited_age_idx", condition=Q(state="visited")),
            # The sitemap change signal: Visited URLs whose sitemap lastmod is newer than their last check.
            models.Index(
                fields=["sitemap_lastmod"],
                name="url_sitemap_lastmod_idx",
                condition=Q(state="visited", sitemap_lastmod__isnull=False),
            ),
        ]
        # On PostgreSQL the key's index also carries id, state and exclusion_reason (migration 0027), so that the
        # known-URL lookup of every extract batch reads the index alone, not a random table page a known link.
        constraints = [models.UniqueConstraint(fields=["url_hash"], name="url_hash_unique")]

    def __str__(self) -> str:
        return self.url


class Page(models.Model):
    """The last stored copy of a URL's body; one row per URL at most."""

    url = models.OneToOneField(Url, on_delete=models.CASCADE, related_name="page")
    body_z = models.BinaryField(help_text="zlib-compressed body")
    title = models.CharField(max_length=512, blank=True)
    description = models.TextField(blank=True)
    content_type = models.CharField(max_length=200, blank=True)
    size = models.PositiveIntegerField(default=0, help_text="Body bytes before compression")
    checksum = models.CharField(max_length=40)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    fetched_at = models.DateTimeField()
    extracted_at = models.DateTimeField(null=True, blank=True)
    # Its element ids and <a name>s, one a line: what a link's #fragment must name (the "missing anchor"
    # check of the link reports). Written by the extract agent with the title; NULL when not known (not HTML,
    # or extracted before migration 0010), and then no fragment pointing here is reported missing.
    anchors = models.TextField(null=True, blank=True)
    extract_dispatched_at = models.DateTimeField(null=True, blank=True)
    # Why the extract agent could not read this copy, or only in part ("pdf_encrypted", "pdf_broken",
    # "pdf_truncated": crawler.pdf); empty when it was read whole. The full-text index of the page is kept
    # beside the row by the extract agent (crawlcore.db.fulltext), not in a model field.
    extract_problem = models.CharField(max_length=32, blank=True, db_default="")
    # What the page says (its visible text, then its description; whitespace collapsed), kept by the extract
    # agent for search snippets, so that no search parses a page again (search.selectors). NULL: extracted
    # before it was kept (the snippet is then the title, until the page is extracted again).
    text = models.TextField(null=True, blank=True)
    # The exchange that brought this copy, for the archive (a WARC request and response record): written by
    # the same statement as the body, columns rather than rows so the load path writes nothing more
    # (crawler.sanitize.clean_head: CRLF-separated, at most 16 KiB each).
    request_head = models.TextField(blank=True, help_text="Request line and headers sent")
    response_head = models.TextField(blank=True, help_text="Status line and headers received")
    peer_ip = models.GenericIPAddressField(null=True, blank=True)
    # The last re-check by GET that did not replace this copy (the body was the same, or 304 Not Modified):
    # the active scan writes it over the previous one; the archive writes it as a revisit record.
    revisit_at = models.DateTimeField(null=True, blank=True)
    revisit_request_head = models.TextField(blank=True)
    revisit_response_head = models.TextField(blank=True)
    # Rendered in a browser (crawlcore.services.render): why (crawler.render_need's reasons), when, the DOM
    # it gave (zlib, UTF-8), which the extract agent reads instead of the body; what stopped a render.
    render_reason = models.CharField(max_length=16, blank=True, default="", db_default="")
    rendered_at = models.DateTimeField(null=True, blank=True)
    dom_z = models.BinaryField(null=True, blank=True)
    render_problem = models.CharField(max_length=200, blank=True, default="", db_default="")
    render_attempts = models.PositiveSmallIntegerField(default=0, db_default=0)
    render_dispatched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["fetched_at"], name="page_unextracted_idx", condition=Q(extracted_at__isnull=True)),
            models.Index(fields=["checksum"], name="page_checksum_idx"),
            # The pages whose text is still to be kept (crawlcore.services.extract.pages_text_fill): few, once
            # the pages extracted before it was kept have it.
            models.Index(
                fields=["id"], name="page_text_missing_idx", condition=Q(text__isnull=True, extracted_at__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return self.title or str(self.url_id)

    @property
    def body(self) -> bytes:
        return page_body(self.body_z)


def page_body(body_z: bytes | memoryview | None) -> bytes:
    """A stored page's body from its `body_z` column (zlib), also for a row read without a model instance."""
    return zlib.decompress(bytes(body_z)) if body_z else b""


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


class Link(models.Model):
    # ~30 per page, the most written table: no database-level foreign keys (two trigger checks a row; the
    # ids come straight from the URL rows, and deletes cascade through the ORM), and from_url has no
    # index of its own: link_unique starts with it.
    from_url = models.ForeignKey(
        Url, on_delete=models.CASCADE, related_name="links_out", db_index=False, db_constraint=False
    )
    to_url = models.ForeignKey(Url, on_delete=models.CASCADE, related_name="links_in", db_constraint=False)
    # What a site owner needs to find the link on the page, of the first occurrence on the
    # page (one row per page and target). Empty on links found before migration 0010. Database defaults, so
    # writers that name only the ids (raw inserts, benchmarks) still work.
    anchor_text = models.CharField(
        max_length=200, blank=True, db_default="", help_text="Whitespace collapsed; alt of an image"
    )
    element = models.CharField(
        max_length=12, blank=True, db_default="", help_text='"a href", "img src", ...; empty on a redirect'
    )
    nofollow = models.BooleanField(db_default=False, help_text="rel=nofollow on the link")
    fragments = models.TextField(
        blank=True, db_default="", help_text="Each #fragment linked to (as written), a tab, its anchor text; one a line"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["from_url", "to_url"], name="link_unique")]
        indexes = [
            # The link reports' refresh: which URLs are linked by #fragment (their anchors decide a break).
            # Partial: such links are few, so it costs the crawl's inserts little.
            models.Index(fields=["to_url"], name="link_fragment_target_idx", condition=~Q(fragments="")),
        ]


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
        max_length=12, choices=_choices(Category) + [(PENDING, "Pending"), (INTERRUPTED, "Interrupted")]
    )
    failure_kind = models.CharField(max_length=32, blank=True)
    detail = models.CharField(max_length=300, blank=True)
    latency_ms = models.FloatField()
    dns_ms = models.FloatField(null=True, blank=True)
    connect_ms = models.FloatField(null=True, blank=True)
    first_byte_ms = models.FloatField(null=True, blank=True)
    body_ms = models.FloatField(null=True, blank=True)
    bytes = models.PositiveIntegerField(default=0)
    agent = models.CharField(max_length=16, choices=_choices(Agent))
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


class UrlEvent(models.Model):
    """One change of a URL's state: who moved it, from where to where, and why."""

    url = models.ForeignKey(Url, on_delete=models.CASCADE, related_name="events", db_index=False)  # event_url_time_idx
    from_state = models.CharField(max_length=12, choices=_choices(State))
    to_state = models.CharField(max_length=12, choices=_choices(State))
    agent = models.CharField(max_length=16, choices=_choices(Agent))
    crawler_num = models.PositiveIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=100, blank=True)

    class Meta:
        indexes = [models.Index(fields=["url", "at"], name="event_url_time_idx")]


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
    exclude = models.JSONField(
        default=list, blank=True, help_text="Regular expressions on the URL path: never follow"
    )
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
    # leaves it as it was (crawlcore.services.jobs.job_hold), for it is not the job's alone.
    joined = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "url"], name="joburl_unique")]


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
