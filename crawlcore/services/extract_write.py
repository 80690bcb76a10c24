"""What a batch's extraction writes once its new URLs are in: the rows of its links, of its pages (what each
says, its text for search snippets) and of their full-text index, and the one statement that writes them
with the exclusions a followed link lifts. Built here, away from the follow rules, because their shape is
the statement's: a column more or less is a change to both."""

from __future__ import annotations

import logging
from datetime import datetime

from crawlcore.db.chain import Const, Input, Insert, SearchVector, Sql, Update, chain
from crawlcore.models import Link, Page, Url
from crawler import notfollowed
from crawler.brokenlinks import fragment_missing
from crawler.fulltext import IndexText
from crawler.lifecycle import State
from crawler.parse import Extracted, Found

from .extract_follow import Parsed, links_of
from .extract_read import StoredPage

log = logging.getLogger(__name__)

LINK_COLUMNS = ("from_url_id", "to_url_id", "anchor_text", "element", "nofollow", "fragments")


def link_rows_of(parsed: Parsed, ids: dict[str, int]) -> list[tuple]:
    """The batch's links to URLs that have an id, one row a (from, to), in key order (LINK_COLUMNS)."""
    links = {
        (page.url_id, ids[link.url]): (link.text, link.element, link.nofollow, _fragments(link))
        for page, ex in parsed
        if ex is not None
        for link, _over in reversed(links_of(ex))  # reversed: the first occurrence on the page is the one kept
        if link.url in ids and (ids[link.url] != page.url_id or _names_nothing_here(link, ex))
    }
    return [(*key, *links[key]) for key in sorted(links)]


def page_rows_of(parsed: Parsed) -> list[tuple]:
    """What each page of the batch says, as its row is written (a page the parser failed on says nothing)."""
    return [
        (
            page.id,
            ex.title if ex else "",
            ex.description if ex else "",
            "\n".join(ex.anchors) if ex and ex.anchors is not None else None,
            ex.problem if ex else "",
            stored_text(ex),
        )
        for page, ex in parsed
    ]


def index_rows_of(parsed: Parsed, *, indexing: bool) -> list[tuple]:
    """Each page's full-text index fields (NULL when SEARCH_INDEX is off: the statement keeps its shape, and
    the page waits for no vector)."""
    return [(page.id, *(_index_text(page, ex).as_row() if indexing else NOT_INDEXED)) for page, ex in parsed]


def stored_text(ex: Extracted | None) -> str:
    """What a page says, as kept on its row for search snippets (search.selectors): its visible text and its
    description, whitespace collapsed, so that a search never parses a page again."""
    if ex is None:
        return ""
    return " ".join(" ".join(t for t in (ex.text, ex.description) if t).split())


def record_limits(parsed: list[tuple[StoredPage, Extracted | None]]) -> None:
    """A page over one of the parse's bounds (crawler.parse: bytes, attributes, nesting, links) says which on
    its URL, as what was wrong with the response (failure_kind, when nothing else was)."""
    for page, ex in parsed:
        if ex is not None and ex.limits:
            kind = ("parse:" + ",".join(ex.limits))[:32]
            log.warning("page %s (%s) is over the parse bounds: %s", page.id, page.url[:200], ", ".join(ex.limits))
            Url.objects.filter(id=page.url_id, failure_kind="").update(failure_kind=kind)


NOT_INDEXED = (None, None, None, None)  # SEARCH_INDEX off: no index text (the statements keep their shape)


def _index_text(page: StoredPage, ex: Extracted | None) -> IndexText:
    """The page's fields for the full-text index (crawler.fulltext), with the anchor text of links to it."""
    if ex is None:
        return IndexText.of(title="", description="", headings="", anchors=page.inbound or "", body="")
    return IndexText.of(
        title=ex.title, description=ex.description, headings=ex.headings, anchors=page.inbound or "", body=ex.text
    )


def record(
    depths: dict[int, int], link_rows: list[tuple], page_rows: list[tuple], index_rows: list[tuple], now: datetime
) -> set[int]:
    """The batch's writes after its new URLs, as one chain (crawlcore.db.chain: one statement on PostgreSQL):
    the exclusions lifted, the links, the pages' extraction, their full-text index (PostgreSQL: its text,
    whose vector a batch builds later, crawlcore.services.search_index) and their duplicate mark.
    The servers of the URLs lifted.

    A URL is lifted when it was set aside only for how it was first found (too deep, nofollow:
    notfollowed.LIFTABLE) and is now found through a link that is followed: due now, at the new depth; one
    set aside for another reason, or no longer Init, is untouched. A link already known is left as it is. A
    page already extracted (a redelivered message) is not written again; a page whose body has the same
    checksum as an earlier page is a duplicate of the earliest one."""
    url, page = Url._meta.db_table, Page._meta.db_table
    liftable = ", ".join(f"'{reason}'" for reason in notfollowed.LIFTABLE)
    # `p.id + 0`, not `p.id`: for min(p.id) PostgreSQL walks the primary key from the smallest id and tests
    # each page's checksum until one matches, which for a new body (the page itself, the newest) is the whole
    # table: quadratic over a crawl, soon most of PostgreSQL's time. An expression
    # takes the rows page_checksum_idx finds (one or a few) instead.
    first = f"(SELECT min(p.id + 0) FROM {page} p WHERE p.checksum = {page}.checksum)"
    writes = [
        Update(
            "lifted",
            url,
            key="id",
            set={"exclusion_reason": Const("", "text"), "depth": "depth", "next_check_at": Const(now, "timestamptz")},
            where=Sql(f"{url}.exclusion_reason IN ({liftable}) AND {url}.state = '{State.INIT.value}'"),
            returning=("server_id",),
            source="lift",
        ),
        # A link already known is left out by its key (from, to) alone: the serial primary key is never probed.
        Insert(
            "linked",
            Link._meta.db_table,
            {c: c for c in LINK_COLUMNS},
            conflict="from_url_id, to_url_id",
            ignore_conflicts=True,
            source="links",
        ),
        Update(
            "extracted",
            page,
            key="id",
            set={
                "title": "title",
                "description": "description",
                "anchors": "anchors",
                "extract_problem": "extract_problem",
                "text": "text",
                "search_vector": SearchVector(),
                "extracted_at": Const(now, "timestamptz"),
                # A page whose body has the same checksum as an earlier page is a duplicate of the earliest one.
                "duplicate_of_id": Sql(f"CASE WHEN {page}.checksum <> '' THEN NULLIF({first}, {page}.id) END"),
            },
            where=Sql(f"{page}.extracted_at IS NULL"),
            returning=(),
            source="pages",
        ),
    ]
    inputs = {
        "lift": Input((("id", "bigint"), ("depth", "integer")), sorted(depths.items())),
        "links": Input(
            (
                ("from_url_id", "bigint"),
                ("to_url_id", "bigint"),
                ("anchor_text", "text"),
                ("element", "text"),
                ("nofollow", "boolean"),
                ("fragments", "text"),
            ),
            link_rows,
        ),
        "pages": Input(
            (
                ("id", "bigint"),
                ("title", "text"),
                ("description", "text"),
                ("anchors", "text"),
                ("extract_problem", "text"),
                ("text", "text"),
                ("ix_title", "text"),
                ("ix_heads", "text"),
                ("ix_anchors", "text"),
                ("ix_body", "text"),
            ),
            [(*page, *index[1:]) for page, index in zip(page_rows, index_rows, strict=True)],
        ),
    }
    out = chain(inputs, writes)
    return {server_id for (server_id,) in out["lifted"]}


def _names_nothing_here(link: Found, ex: Extracted) -> bool:
    """A link from a page to itself is no edge of the crawl's graph and is not stored, except when one of
    its #fragments names no element of the page: then it is a broken link a reader meets (the link reports
    read it like any other missing anchor)."""
    if not link.fragments:
        return False
    anchors = "\n".join(ex.anchors)
    return any(fragment_missing(fragment, anchors) for fragment, _ in link.fragments)


def _fragments(link: Found) -> str:
    # Tabs and line ends separate the fields; an anchor text has neither (whitespace collapsed), a fragment
    # may: those are dropped, no element id can match them anyway.
    if not link.fragments:
        return ""
    return "\n".join(f"{f}\t{text}" for f, text in link.fragments if "\t" not in f and "\n" not in f)
