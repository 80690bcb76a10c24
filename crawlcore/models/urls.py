"""The frontier and what it found: a known URL and its life-cycle (Url, and UrlEvent for each move), the
stored copy of its page, and the links between URLs. The rows the load and extract agents write most."""

from __future__ import annotations

import zlib

from django.db import models
from django.db.models import Q

from crawler.lifecycle import Agent, State

from .choices import enum_choices
from .servers import Server


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
    state = models.CharField(max_length=12, choices=enum_choices(State), default=State.INIT.value)
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
    # An IndexNow push said the page changed then (crawlcore.services.indexnow): due for the active scan while
    # it is newer than the last check, like a sitemap lastmod.
    pushed_at = models.DateTimeField(null=True, blank=True)
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
            # The IndexNow signal, alike: Visited URLs pushed since their last check.
            models.Index(
                fields=["pushed_at"], name="url_pushed_idx", condition=Q(state="visited", pushed_at__isnull=False)
            ),
        ]
        # On PostgreSQL the key's index also carries id, state and exclusion_reason (migration 0027), so that the
        # known-URL lookup of every extract batch reads the index alone, not a random table page a known link.
        constraints = [models.UniqueConstraint(fields=["url_hash"], name="url_hash_unique")]

    def __str__(self) -> str:
        return self.url


class UrlEvent(models.Model):
    """One change of a URL's state: who moved it, from where to where, and why."""

    url = models.ForeignKey(Url, on_delete=models.CASCADE, related_name="events", db_index=False)  # event_url_time_idx
    from_state = models.CharField(max_length=12, choices=enum_choices(State))
    to_state = models.CharField(max_length=12, choices=enum_choices(State))
    agent = models.CharField(max_length=16, choices=enum_choices(Agent))
    crawler_num = models.PositiveIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=100, blank=True)

    class Meta:
        indexes = [models.Index(fields=["url", "at"], name="event_url_time_idx")]


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
