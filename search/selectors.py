"""Search over the stored pages: the full-text index (crawlcore.db.fulltext) filtered and ordered by text
relevance combined with the page's stored BlockRank (crawler.fulltext.score, computed by the database)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import F, FloatField, Q, Value
from django.db.models.functions import Coalesce, Ln

from crawlcore.db import fulltext
from crawlcore.models import Page
from crawler.fulltext import query_words, snippet
from ranking.models import RankRun

MAX_LIMIT = 200
# What --type / the type filter accepts besides a media type (a prefix of the Content-Type).
TYPE_ALIASES = {
    "pdf": ("application/pdf", "application/x-pdf"),
    "html": ("text/html", "application/xhtml+xml"),
}


class SearchError(ValueError):
    """A query or filter that cannot be run: one line for the user."""


@dataclass(frozen=True)
class Filters:
    site: str = ""  # host, or host:port
    group: str = ""  # server group
    language: str = ""  # ISO 639-1, as the analyzer told it (pages not analysed yet are left out)
    content_type: str = ""  # "pdf", "html", or a media type (prefix of the Content-Type)
    since: datetime | None = None  # fetched at or after
    until: datetime | None = None  # fetched before
    groups: frozenset[str] | None = None  # the server groups the reader may see (None: all)


@dataclass(frozen=True)
class Hit:
    page_id: int
    url_id: int
    url: str
    title: str
    content_type: str
    fetched_at: datetime
    relevance: float  # text relevance, >= 0 (crawlcore.db.fulltext.Relevance)
    rank: float  # the page's stored BlockRank (0 when never ranked)
    score: float
    snippet: str  # HTML: escaped text, the matched words in <mark>

    def as_json(self) -> dict:
        return {
            "url": self.url, "title": self.title, "score": self.score, "relevance": self.relevance,
            "rank": self.rank, "content_type": self.content_type, "fetched_at": self.fetched_at.isoformat(),
            "snippet": self.snippet, "page_id": self.page_id,
        }  # fmt: skip


def _filtered(qs, f: Filters):
    if f.groups is not None:
        qs = qs.filter(url__server__group__in=sorted(f.groups))
    if f.site:
        site = f.site.lower()
        host, _, port = site.rpartition(":") if site.count(":") == 1 else (site, "", "")
        if not port:
            qs = qs.filter(url__server__host=site)
        elif port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65535:
            qs = qs.filter(url__server__host=host, url__server__port=int(port))
        else:
            qs = qs.none()  # no server has that port ("²" is a digit to str.isdigit, not to int)
    if f.group:
        qs = qs.filter(url__server__group=f.group)
    if f.language:
        qs = qs.filter(analysis__language=f.language.lower())
    if f.content_type:
        kinds = TYPE_ALIASES.get(f.content_type.lower(), (f.content_type.lower(),))
        test = Q()
        for kind in kinds:
            test |= Q(content_type__istartswith=kind)
        qs = qs.filter(test)
    if f.since is not None:
        qs = qs.filter(fetched_at__gte=f.since)
    if f.until is not None:
        qs = qs.filter(fetched_at__lt=f.until)
    return qs


def ranked_pages() -> int:
    """How many pages the latest ranking run ranked (the `pages` of crawler.fulltext.score)."""
    run = RankRun.objects.order_by("-finished_at").values_list("pages", flat=True).first()
    return int(run or 0)


def search_pages(
    *, query: str, filters: Filters | None = None, limit: int = 20, offset: int = 0, snippets: bool = True
) -> list[Hit]:
    """The pages matching every word of `query`, best first (crawler.fulltext.score: text relevance times a
    boost from the page's BlockRank), `limit` of them from `offset`. A duplicate page (same body as an
    earlier one) is left out: the earlier one stands for it. Raises SearchError on a query without words."""
    words = query_words(query)
    if not words:
        raise SearchError("the query has no words to search for")
    if not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"the limit must be between 1 and {MAX_LIMIT}")
    pages, weight = ranked_pages(), float(settings.SEARCH_RANK_WEIGHT)
    qs = _filtered(Page.objects.filter(fulltext.Matches(words), duplicate_of__isnull=True), filters or Filters())
    rel = F("relevance")
    qs = qs.annotate(
        relevance=fulltext.Relevance(words),
        page_rank=Coalesce(F("url__pagerank__rank"), Value(0.0), output_field=FloatField()),
    ).annotate(
        score=rel
        / (rel + Value(1.0))
        * (Value(1.0) + Value(weight) * Ln(Value(1.0) + Value(float(pages)) * F("page_rank")))
    )
    rows = qs.order_by("-score", "url_id").values_list(
        "id", "url_id", "url__url", "title", "content_type", "fetched_at", "relevance", "page_rank", "score"
    )[offset : offset + limit]
    hits = [Hit(*row, snippet="") for row in rows]
    if not snippets or not hits:
        return hits
    texts = dict(Page.objects.filter(id__in=[h.page_id for h in hits]).values_list("id", "text"))
    return [Hit(**{**h.__dict__, "snippet": _snippet(h, texts.get(h.page_id), query)}) for h in hits]


def _snippet(hit: Hit, text: str | None, query: str) -> str:
    """The passage of the page's text where the query's words are, from the text the extract agent kept
    (Page.text): a search never parses a page (a PDF's read costs seconds and hundreds of megabytes). A page
    extracted before that text was kept shows its title."""
    return snippet(text or hit.title, query)
