"""What the analyzer stores: one row per analysed page, the domains the crawl names, and which page named
which domain. Derived data: `manage.py analyze` (analyzer.services) writes it, the report reads it."""

from __future__ import annotations

from django.db import models

from crawlcore.models import Page


class PageAnalysis(models.Model):
    """The analyzer's facts about one stored page (analyzer.classify.PageFacts)."""

    page = models.OneToOneField(Page, primary_key=True, on_delete=models.CASCADE, related_name="analysis")
    fetched_at = models.DateTimeField(help_text="The page's fetched_at when analysed: a newer fetch is analysed again")
    language = models.CharField(max_length=8, blank=True, help_text="ISO 639-1; empty when none could be told")
    host = models.CharField(max_length=255)
    tld = models.CharField(max_length=63, blank=True, help_text="Empty for an IP address")
    suffix = models.CharField(max_length=100, blank=True, help_text="Public suffix, e.g. ac.kr")
    media_type = models.CharField(max_length=100, blank=True)
    content_class = models.CharField(max_length=10, help_text="document, multimedia or other")
    homepage_kind = models.CharField(max_length=4, blank=True, help_text="user (~user), root, or empty")
    homepage = models.CharField(max_length=300, blank=True, help_text="host/~user or host/")
    analyzed_at = models.DateTimeField()

    class Meta:
        verbose_name = "page analysis"
        verbose_name_plural = "page analyses"
        indexes = [
            # Homepages are counted distinct; the partial index holds only the few pages that are one.
            models.Index(
                fields=["homepage_kind", "homepage"], name="analysis_homepage_idx", condition=~models.Q(homepage="")
            ),
        ]

    def __str__(self) -> str:
        return f"page {self.page_id}: {self.language or '?'} {self.media_type}"


class Domain(models.Model):
    """A registered domain named by some page (as its host, or in a URL, e-mail or FTP address)."""

    name = models.CharField(max_length=255, unique=True)
    tld = models.CharField(max_length=63)
    suffix = models.CharField(max_length=100)
    ip = models.GenericIPAddressField(
        null=True, blank=True, help_text="An address of the name: the crawler's, else the resolver's"
    )
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="When the resolver was asked (if it was)")

    def __str__(self) -> str:
        return self.name


class PageDomain(models.Model):
    """Page `page` names `domain`, as a web address, an e-mail address and/or an FTP address. Rewritten with
    the page's analysis, so a domain no current page names drops out of the report."""

    pk = models.CompositePrimaryKey("page_id", "domain_id")
    page = models.ForeignKey(PageAnalysis, on_delete=models.CASCADE, related_name="domains")
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="+")
    web = models.BooleanField(default=False)
    email = models.BooleanField(default=False)
    ftp = models.BooleanField(default=False)

    class Meta:
        verbose_name = "domain named by a page"
