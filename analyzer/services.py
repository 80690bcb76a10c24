"""The analyzer's writes: analyse stored pages in streaming batches, and find the addresses of the active
domains that the national/foreign split needs.

Pages are read in id order, `batch_size` at a time (keyset pagination: `id > last ORDER BY id LIMIT n`),
classified by the pure analyzer.classify, and written in bulk, one transaction per batch. Memory holds
one batch, whatever the size of the crawl; a run stopped half-way keeps its finished batches and the next
run goes on with the rest. A page re-fetched since its analysis is analysed again.

A page whose content duplicates an earlier page (the extract agent's checksum mark, seed 003's page dedup) is
not analysed: it is the same page under another URL, and the report counts each page once. One analysed
before the mark was set is left out of the report (analyzer.selectors) rather than deleted.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from crawlcore.models import Page, Server
from crawlcore.selectors import pages_duplicate
from crawler.netguard import Network, parse_cidrs
from crawler.pdf import is_pdf

from .classify import MAX_SCAN_BYTES, PageFacts, analyze_page
from .domains import EMAIL, FTP, WEB, host_info, in_networks
from .models import Domain, PageAnalysis, PageDomain
from .resolve import Resolver, resolve_many

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
"""Called with the number of pages just analysed."""

_ANALYSIS_FIELDS = [
    "fetched_at", "language", "host", "tld", "suffix", "media_type", "content_class", "homepage_kind", "homepage",
    "analyzed_at",
]
# Domain name -> id, across batches of one run; cleared when it grows past this (a crawl may name millions).
_DOMAIN_CACHE_MAX = 200_000


@dataclass
class AnalyseOutcome:
    pages: int = 0
    failed: int = 0
    domain_links: int = 0  # (page, domain) pairs written
    new_domains: int = 0
    seconds: float = 0.0


@dataclass
class ResolveOutcome:
    asked: int = 0  # names sent to the resolver
    from_crawl: int = 0  # addresses the crawler already knew (Server.ip)
    found: int = 0  # names that got an address


def national_networks() -> tuple[Network, ...]:
    """ANALYZER_NATIONAL_CIDRS as networks (validated when the settings loaded)."""
    return parse_cidrs(" ".join(settings.ANALYZER_NATIONAL_CIDRS))


def pages_pending(*, reanalyse: bool = False) -> QuerySet[Page]:
    """Pages never analysed, or fetched again since their analysis (all pages with reanalyse); never a page
    that duplicates an earlier one."""
    pages = Page.objects.exclude(pages_duplicate())
    if not reanalyse:
        pages = pages.filter(Q(analysis__isnull=True) | Q(analysis__fetched_at__lt=F("fetched_at")))
    return pages


def _read_body(body_z: bytes | memoryview, *, whole: bool = False) -> bytes:
    """The first MAX_SCAN_BYTES of a stored body: a 10 MB page is never inflated whole. A PDF (`whole`) is:
    its cross-reference table is at its end (stored bodies are bounded by CRAWL_MAX_BODY_BYTES)."""
    if not body_z:
        return b""
    try:
        return zlib.decompress(body_z) if whole else zlib.decompressobj().decompress(body_z, MAX_SCAN_BYTES)
    except zlib.error:
        return b""


def _batches(batch_size: int, reanalyse: bool, limit: int | None) -> Iterator[list[tuple]]:
    """Pending pages, `batch_size` page ids at a time. Three index lookups per batch, each the size of the
    batch: the next ids (keyset), their analyses, then the bodies of those pending. (One query with a LEFT
    JOIN on the analyses let PostgreSQL merge-join from the start of their index on every batch: quadratic.)"""
    last, seen = 0, 0
    while limit is None or seen < limit:
        head = list(Page.objects.filter(id__gt=last).order_by("id").values_list("id", "fetched_at")[:batch_size])
        if not head:
            return
        last = head[-1][0]
        copies = set(Page.objects.filter(pages_duplicate(), id__in=[pk for pk, _ in head]).values_list("id", flat=True))
        head = [(pk, fetched) for pk, fetched in head if pk not in copies]
        analyses = PageAnalysis.objects.filter(page_id__in=[pk for pk, _ in head])
        done = dict(analyses.values_list("page_id", "fetched_at"))
        todo = [pk for pk, fetched in head if reanalyse or pk not in done or done[pk] < fetched]
        if limit is not None:
            todo = todo[: limit - seen]
        if not todo:
            continue
        rows = (
            Page.objects.filter(id__in=todo)
            .order_by("id")
            .values_list("id", "fetched_at", "content_type", "body_z", "url__url", "text")
        )
        yield [(*row, row[0] in done) for row in rows]
        seen += len(todo)


def pages_analyse(
    *, batch_size: int = 1000, reanalyse: bool = False, limit: int | None = None, progress: Progress | None = None
) -> AnalyseOutcome:
    """Analyse the pending pages (pages_pending) and store the results. Idempotent: a page's analysis and
    its domains are rewritten as a whole, so a batch run twice (two runs at once, a retry) ends the same."""
    started = time.perf_counter()
    outcome = AnalyseOutcome()
    cache: dict[str, int] = {}
    for rows in _batches(batch_size, reanalyse, limit):
        results: list[tuple[int, object, PageFacts]] = []
        redone: list[int] = []
        for page_id, fetched_at, content_type, body_z, url, text, analysed_before in rows:
            try:
                facts = analyze_page(
                    url, content_type, lambda body_z=body_z, ct=content_type: _read_body(body_z, whole=is_pdf(ct)),
                    pdf_text=text,
                )
            except Exception:  # a classifier bug must not stop a million-page run: log, skip, go on
                log.exception("analysis failed for page %s (%s)", page_id, url[:200])
                outcome.failed += 1
                continue
            results.append((page_id, fetched_at, facts))
            if analysed_before:
                redone.append(page_id)
        links, new = _write_batch(results, redone, cache)
        outcome.pages += len(results)
        outcome.domain_links += links
        outcome.new_domains += new
        if progress is not None:
            progress(len(rows))
    outcome.seconds = time.perf_counter() - started
    return outcome


def _write_batch(results: list[tuple[int, object, PageFacts]], redone: list[int], cache: dict[str, int]) -> tuple:
    now = timezone.now()
    analyses = [
        PageAnalysis(
            page_id=page_id, fetched_at=fetched_at, language=f.language, host=f.host[:255], tld=f.tld[:63],
            suffix=f.suffix[:100], media_type=f.media_type, content_class=f.content_class,
            homepage_kind=f.homepage_kind, homepage=f.homepage[:300], analyzed_at=now,
        )
        for page_id, fetched_at, f in results
    ]
    with transaction.atomic():
        PageAnalysis.objects.bulk_create(
            analyses, update_conflicts=True, unique_fields=["page"], update_fields=_ANALYSIS_FIELDS
        )
        if redone:
            PageDomain.objects.filter(page_id__in=redone).delete()
        new = _domain_ids([name for _, _, f in results for name in f.domains], cache)
        links = [
            PageDomain(
                page_id=page_id, domain_id=cache[name], web=WEB in sources, email=EMAIL in sources, ftp=FTP in sources
            )
            for page_id, _, f in results
            for name, sources in f.domains.items()
        ]
        # ignore_conflicts: a concurrent run may have written the same pairs a moment ago.
        PageDomain.objects.bulk_create(links, ignore_conflicts=True)
    return len(links), new


def _domain_ids(names: list[str], cache: dict[str, int]) -> int:
    """Fill `cache` with the ids of `names`, inserting the names not stored yet. Returns how many were new."""
    if len(cache) > _DOMAIN_CACHE_MAX:
        cache.clear()
    missing = {name for name in names if name not in cache}
    if not missing:
        return 0
    known = dict(Domain.objects.filter(name__in=missing).values_list("name", "id"))
    cache.update(known)
    fresh = missing - known.keys()
    if fresh:
        infos = {name: host_info(name) for name in fresh}
        Domain.objects.bulk_create(
            [Domain(name=name, tld=i.tld, suffix=i.suffix) for name, i in infos.items()], ignore_conflicts=True
        )
        cache.update(Domain.objects.filter(name__in=fresh).values_list("name", "id"))
    return len(fresh)


def active_domains() -> QuerySet[Domain]:
    """Domains some analysed page names now (a page that duplicates another is not counted)."""
    return Domain.objects.filter(Exists(counted_page_domains().filter(domain_id=OuterRef("pk"))))


def counted_page_domains() -> QuerySet[PageDomain]:
    """The (page, domain) pairs the report counts: those of pages that do not duplicate an earlier page."""
    return PageDomain.objects.exclude(pages_duplicate("page__page__"))  # PageDomain.page is the analysis


def domains_resolve(
    *,
    resolver: Resolver,
    national_tld: str,
    networks: Sequence,
    batch_size: int = 500,
    concurrency: int = 16,
    progress: Progress | None = None,
) -> ResolveOutcome:
    """Give an address to each active foreign domain that has none yet, so the report can tell foreign
    names on national IP ranges (Find_Active_Domain). The crawler's own address of a host under the domain
    is used first; the resolver is asked only for the rest, and only when national ranges are configured:
    without them no address can make a difference, so nothing is looked up. Each name is asked once
    (resolved_at); one that did not resolve stays without an address."""
    outcome = ResolveOutcome()
    if not networks:
        return outcome
    crawl_ips = _crawl_addresses(networks)
    pending = active_domains().exclude(tld=national_tld).filter(ip__isnull=True, resolved_at__isnull=True)
    last = 0
    while True:
        chunk = list(pending.filter(id__gt=last).order_by("id").only("id", "name")[:batch_size])
        if not chunk:
            return outcome
        last = chunk[-1].id
        ask = [d.name for d in chunk if d.name not in crawl_ips]
        answers = resolve_many(resolver, ask, concurrency=concurrency)
        now = timezone.now()
        for d in chunk:
            if d.name in crawl_ips:
                d.ip = crawl_ips[d.name]
                outcome.from_crawl += 1
            else:
                d.ip = _pick(answers.get(d.name, []), networks)
                d.resolved_at = now
                outcome.asked += 1
            outcome.found += d.ip is not None
        Domain.objects.bulk_update(chunk, ["ip", "resolved_at"])
        if progress is not None:
            progress(len(chunk))


def _crawl_addresses(networks: Sequence) -> dict[str, str]:
    """Registered domain -> an address the crawler resolved for one of its hosts (a national one if any)."""
    out: dict[str, str] = {}
    for host, ip in Server.objects.exclude(ip__isnull=True).values_list("host", "ip").iterator(chunk_size=5000):
        domain = host_info(host).domain
        if domain and (domain not in out or (in_networks(ip, networks) and not in_networks(out[domain], networks))):
            out[domain] = ip
    return out


def _pick(addresses: Sequence[str], networks: Sequence) -> str | None:
    """The address to keep: one in a national range if there is one, else the first."""
    for ip in addresses:
        if in_networks(ip, networks):
            return ip
    return addresses[0] if addresses else None
