"""Ranks of the latest run, one row per known URL, and a record of each run."""

from __future__ import annotations

from django.db import models

from crawlcore.models import Server, Url

BLOCK_CHOICES = [("site", "Site"), ("domain", "Domain"), ("community", "Community")]
METHOD_CHOICES = [
    ("blockrank", "Exact PageRank, started from BlockRank"),
    ("blockrank-local", "Local rank x block rank (seed 003, no global iteration)"),
]


class PageRank(models.Model):
    """A page's rank from the latest run, with the IDs the converting step gave it (seed 003).

    Derived data, rewritten in bulk by each run (ranking.services.rank_crawl); nothing else writes it.
    The foreign keys have no database constraint on purpose: checking them would cost two index
    probes per row when a run rewrites a million rows; a URL deleted through the ORM still takes its
    rank row with it (Django cascades), and the next run drops rows of URLs gone any other way.
    """

    url = models.OneToOneField(
        Url, primary_key=True, on_delete=models.CASCADE, db_constraint=False, related_name="pagerank"
    )
    server = models.ForeignKey(  # no index of its own: (server, -rank) below serves lookups by server
        Server, on_delete=models.CASCADE, db_constraint=False, db_index=False, related_name="+",
        help_text="The page's site (an alias server's pages count for the server it aliases)",
    )
    # Dense IDs of the run that wrote the row: positions in its matrices, not stable identities.
    page_id = models.PositiveIntegerField()
    site_id = models.PositiveIntegerField()
    domain_id = models.PositiveIntegerField()
    community_id = models.PositiveIntegerField()
    domain = models.CharField(max_length=255, help_text="Registered domain of the site")
    community = models.CharField(max_length=255, help_text="The site's server group, or its domain")
    rank = models.FloatField(help_text="The run's rank (its method's); all pages' ranks sum to 1")
    local_rank = models.FloatField(help_text="PageRank inside the page's block (sums to 1 per block)")
    block_rank = models.FloatField(help_text="Rank of the page's block in the block graph")
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name = "page rank"
        indexes = [
            # The dashboard's lists: top pages overall, per site, per domain.
            models.Index(fields=["-rank"], name="pagerank_top_idx"),
            models.Index(fields=["server", "-rank"], name="pagerank_site_top_idx"),
            models.Index(fields=["domain", "-rank"], name="pagerank_domain_top_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.url_id}: {self.rank:.3g}"


class RankRun(models.Model):
    """One ranking run: what it ranked, how many iterations each phase took, and how long."""

    finished_at = models.DateTimeField(db_index=True)
    block = models.CharField(max_length=10, choices=BLOCK_CHOICES)
    method = models.CharField(max_length=20, choices=METHOD_CHOICES, default="blockrank")
    pages = models.PositiveIntegerField()
    duplicates = models.PositiveIntegerField(
        default=0, help_text="URLs whose content duplicates an earlier page: merged into it, no rank of their own"
    )
    links = models.PositiveBigIntegerField()
    dangling = models.PositiveIntegerField(help_text="Pages without out-links (never fetched, or no links)")
    sites = models.PositiveIntegerField()
    domains = models.PositiveIntegerField()
    communities = models.PositiveIntegerField()
    blocks = models.PositiveIntegerField()
    damping = models.FloatField()
    tolerance = models.FloatField(help_text="L1 residual threshold")
    local_iterations = models.PositiveIntegerField()
    block_iterations = models.PositiveIntegerField()
    global_iterations = models.PositiveIntegerField()
    uniform_iterations = models.PositiveIntegerField(
        null=True, blank=True, help_text="Iterations of PageRank from a uniform start (measured with --compare)"
    )
    converged = models.BooleanField()
    residual = models.FloatField()
    l1_to_exact = models.FloatField(
        null=True, blank=True, help_text="L1 distance of the stored ranks to exact PageRank (when compared)"
    )
    exact_seconds = models.FloatField(
        null=True, blank=True, help_text="Time of the exact PageRank it was compared with"
    )
    read_seconds = models.FloatField()
    convert_seconds = models.FloatField(default=0.0, help_text="Converting: dense IDs, links in page IDs, the graph")
    rank_seconds = models.FloatField()
    write_seconds = models.FloatField()

    class Meta:
        ordering = ["-finished_at"]

    def __str__(self) -> str:
        return f"{self.finished_at:%Y-%m-%d %H:%M} by {self.block}: {self.pages} pages"

    @property
    def iterations_saved(self) -> int | None:
        """Global iterations the BlockRank start saved against a uniform start (none for blockrank-local, which
        has no global phase and does not reach PageRank)."""
        if self.uniform_iterations is None or self.method == "blockrank-local":
            return None
        return self.uniform_iterations - self.global_iterations
