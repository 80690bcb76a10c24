"""A server's sitemaps: found in robots.txt `Sitemap:` lines and at /sitemap.xml, read on the
load agent's visit at most once per CRAWL_SITEMAP_TTL, through the visit (politeness turn, the guard on
every redirect hop, a status check per request). Indexes are followed down to crawler.sitemap.MAX_DEPTH,
at most MAX_FILES files per visit.

What a sitemap lists on the server itself and within the crawl's scope enters as Init (known URLs stay as
they are) and gets the sitemap's lastmod, changefreq and priority. A lastmod is kept no later than the
moment it was read, so a date in the future can't keep a URL due for ever. Each file's outcome, a bad
one's error included, is a Sitemap row; a bad sitemap stops nothing.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from crawlcore.db.bulk import update_by_id
from crawlcore.models import Server, Sitemap, Url
from crawler.http import FetchResult
from crawler.robots import RobotsRules, sitemap_urls
from crawler.scope import registered_domain
from crawler.sitemap import MAX_DEPTH, MAX_FILES, Entry, Kind, SitemapError, parse
from crawler.urlnorm import UrlError, canonicalize, server_key

from .jobs import jobs_admit
from .urls import Claimed, new_url_from, urls_insert, urls_known
from .visit import ServerVisit

log = logging.getLogger(__name__)

INSERT_GROUP = 1000  # URLs inserted per statement group


@dataclass
class SitemapsOutcome:
    files: int = 0
    listed: int = 0
    added: int = 0
    errors: int = 0
    skipped: int = 0  # robots.txt Sitemap: lines naming another host, not requested


def server_claim_sitemaps(*, server_id: int, now: datetime) -> bool:
    """Take this server's sitemap reading for this TTL period: one guarded UPDATE, so two visits of the
    server (CRAWL_SERVER_CONCURRENCY > 1, or two machines) don't both read them."""
    stale = now - timedelta(seconds=settings.CRAWL_SITEMAP_TTL)
    return (
        Server.objects.filter(id=server_id)
        .filter(Q(sitemaps_read_at__isnull=True) | Q(sitemaps_read_at__lt=stale))
        .update(sitemaps_read_at=now)
        == 1
    )


def sitemaps_read(*, visit: ServerVisit, rules: RobotsRules, parent: Claimed) -> SitemapsOutcome | None:
    """Read the server's sitemaps if they are due (None when they are not, or another visit has them).
    `parent` lends its scope to the URLs found (the batch's shallowest URL)."""
    now = timezone.now()
    if not settings.CRAWL_SITEMAPS or not server_claim_sitemaps(server_id=visit.server.id, now=now):
        return None
    return SitemapReader(visit, rules, parent).run()


class SitemapReader:
    def __init__(self, visit: ServerVisit, rules: RobotsRules, parent: Claimed) -> None:
        self.visit = visit
        self.rules = rules
        self.parent = parent
        self.server = visit.server
        self.key = server_key(f"{self.server.origin}/")
        self.outcome = SitemapsOutcome()

    def run(self) -> SitemapsOutcome:
        origin = self.server.origin
        queue: deque[tuple[str, str, int]] = deque()
        for url in sitemap_urls(rules=self.rules, base=f"{origin}/robots.txt"):
            if self._listed_sitemap_ours(url):
                queue.append((url, "robots", 0))
            else:
                self.outcome.skipped += 1
        default = f"{origin}/sitemap.xml"
        if all(url != default for url, _, _ in queue) and self.rules.allowed(default, self.visit.user_agent):
            queue.append((default, "default", 0))
        seen: set[str] = set()
        while queue and self.outcome.files < MAX_FILES and not self.visit.stopping():
            url, source, depth = queue.popleft()
            if url in seen:
                continue
            seen.add(url)
            for child in self.read_one(url, source, depth):
                if child not in seen:
                    queue.append((child, "index", depth + 1))
        return self.outcome

    def read_one(self, url: str, source: str, depth: int) -> list[str]:
        """Fetch and use one sitemap file; the sitemaps it lists when it is an index."""
        self.outcome.files += 1
        result = self.visit.fetch_following(url)
        row = Sitemap(server=self.server, url=url[:2048], source=source, fetched_at=timezone.now())
        row.status_code = result.status if result.status is not None and 100 <= result.status <= 999 else None
        children: list[str] = []
        try:
            parsed = parse(self._body(result, source))
        except SitemapError as exc:
            row.error = str(exc)[:300]
        else:
            row.kind = parsed.kind.value
            row.urls_listed = len(parsed.entries)
            row.error = parsed.error
            if parsed.kind == Kind.INDEX:
                if depth + 1 > MAX_DEPTH:
                    row.error = f"an index nested more than {MAX_DEPTH} deep: not followed"
                else:
                    children = [u for u in (self._own(e.loc) for e in parsed.entries) if u is not None]
            else:
                row.urls_added = self.add(parsed.entries, read_at=row.fetched_at)
        if row.error and not (source == "default" and row.status_code == 404):
            self.outcome.errors += 1
            log.info("sitemap %s of %s: %s", url[:200], self.server.origin, row.error)
        self.outcome.listed += row.urls_listed
        self.outcome.added += row.urls_added
        self._save(row)
        return children

    @staticmethod
    def _body(result: FetchResult, source: str) -> bytes:
        if result.status is None or result.incomplete:
            raise SitemapError(f"no response: {result.detail}")
        if result.status == 404 and source == "default":
            raise SitemapError("none (404)")  # most servers have none: not counted as an error
        if result.status != 200:
            raise SitemapError(f"HTTP {result.status}")
        if result.truncated:
            raise SitemapError(f"larger than the body limit ({settings.CRAWL_MAX_BODY_BYTES} bytes)")
        return result.body

    def _listed_sitemap_ours(self, url: str) -> bool:
        """Whether a robots.txt `Sitemap:` line names a sitemap this visit may request: on the server's own
        host (any scheme or port: https://example.org/sitemap.xml in http://example.org's robots.txt), or,
        with CRAWL_SITEMAP_DOMAIN, on another host of its registered domain (sitemaps.example.org for
        www.example.org). A line naming any other host is not requested: a robots.txt could otherwise send
        the crawler to third parties a hundred times a visit, as the sitemaps an index lists already are not."""
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            return False
        own = self.server.host.strip("[]").lower()
        if not host or host == own:
            return bool(host)
        return settings.CRAWL_SITEMAP_DOMAIN and registered_domain(host) == registered_domain(own)

    def _own(self, loc: str) -> str | None:
        """A URL listed in a sitemap, canonical, when it is on this server; None otherwise (a sitemap
        speaks for its own server only, and a listed sitemap elsewhere is not ours to request)."""
        try:
            url = canonicalize(loc)
        except UrlError:
            return None
        return url if server_key(url) == self.key else None

    def add(self, entries: list[Entry], *, read_at: datetime) -> int:
        added = 0
        for start in range(0, len(entries), INSERT_GROUP):
            added += self._add_group(entries[start : start + INSERT_GROUP], read_at=read_at)
        return added

    def _add_group(self, entries: list[Entry], *, read_at: datetime) -> int:
        found: dict[str, Entry] = {}
        for entry in entries:
            url = self._own(entry.loc)
            if url is not None and self.rules.allowed(url, self.visit.user_agent):
                found[url] = entry
        news = [new_url_from(self.parent, url, depth=self.parent.depth + 1) for url in found]
        # A job's server: its sitemap adds what the parent's jobs take in (one link from the parent).
        admission = jobs_admit(links=[(self.parent.id, n.url, 1) for n in news])
        if admission.applies(self.parent.id):
            news = [admission.candidate(n) for n in news]
        news = [n for n in news if not n.exclusion_reason]  # out of the crawl's scope: not added at all
        if not news:
            return 0
        known = urls_known(n.url for n in news)
        before = len(known.ids)
        inserted = urls_insert(urls=news, known=known)  # no second lookup of the same URLs
        admission.record(inserted.ids)
        rows = []
        for new in news:
            entry, url_id = found[new.url], inserted.ids.get(new.url)
            if url_id is None:
                continue
            lastmod = min(entry.lastmod, read_at) if entry.lastmod is not None else None
            rows.append((url_id, True, lastmod, entry.changefreq, entry.priority))
        update_by_id(
            Url._meta.db_table,
            (
                ("in_sitemap", "boolean"),
                ("sitemap_lastmod", "timestamptz"),
                ("sitemap_changefreq", "varchar"),
                ("sitemap_priority", "double precision"),
            ),
            rows,
        )
        return len(news) - before

    def _save(self, row: Sitemap) -> None:
        Sitemap.objects.update_or_create(
            server=row.server,
            url=row.url,
            defaults={
                f: getattr(row, f)
                for f in ("source", "kind", "fetched_at", "status_code", "urls_listed", "urls_added", "error")
            },
        )
