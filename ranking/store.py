"""The ranking's bulk I/O: the link graph read as arrays, every page's ranks written back, through
crawlcore.db.arrays (binary COPY on PostgreSQL, chunked cursors on SQLite). Never an ORM object per row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from crawlcore.db.arrays import Advance, Labels, Numbers, int_pairs, table_refill
from crawlcore.models import Link, Page, Server, Url
from crawlcore.selectors import pages_duplicate

from .convert import Converted, Site
from .models import PageRank


@dataclass(frozen=True)
class RawGraph:
    sites: list[Site]
    url_ids: np.ndarray  # int64
    url_server: np.ndarray  # int64
    link_from: np.ndarray  # int64 Url ids
    link_to: np.ndarray
    duplicates: tuple[np.ndarray, np.ndarray]  # (Url id of a duplicate page, Url id of the page it duplicates)


@dataclass(frozen=True)
class RankRows:
    """What a run writes back: one row per page, and the names behind the dense domain/community IDs."""

    converted: Converted
    rank: np.ndarray
    local_rank: np.ndarray
    block_rank: np.ndarray  # per page: the rank of its block


def graph_read(*, on_table: Callable[[str, int], None] | None = None) -> RawGraph:
    """Servers, URLs and links, as arrays. Call it inside crawlcore.db.transactions.read_snapshot() so
    the three reads see one snapshot (services.rank_crawl does)."""
    sites = [Site(*row) for row in Server.objects.values_list("id", "host", "group", "alias_of_id")]
    url_ids, url_server = int_pairs(Url._meta.db_table, "id", "server_id")
    if on_table:
        on_table("urls", len(url_ids))
    link_from, link_to = int_pairs(Link._meta.db_table, "from_url_id", "to_url_id")
    if on_table:
        on_table("links", len(link_from))
    # Few rows (the duplicates only): through the ORM.
    pairs = np.array(
        Page.objects.filter(pages_duplicate()).values_list("url_id", "duplicate_of__url_id"), dtype=np.int64
    ).reshape(-1, 2)
    return RawGraph(
        sites=sites, url_ids=url_ids, url_server=url_server, link_from=link_from, link_to=link_to,
        duplicates=(pairs[:, 0], pairs[:, 1]),
    )


def ranks_write(rows: RankRows, *, computed_at: datetime, advance: Advance | None = None) -> int:
    """Store every page's row, and no row of a URL this run did not see (gone since the last run). Call
    inside a transaction: readers see the old ranks or the new, never a mix."""
    c = rows.converted
    columns = [
        Numbers("url_id", ">i8", c.url_ids), Numbers("server_id", ">i8", c.page_server),
        Numbers("page_id", ">i4", np.arange(c.pages)), Numbers("site_id", ">i4", c.page_site),
        Numbers("domain_id", ">i4", c.page_domain), Numbers("community_id", ">i4", c.page_community),
        Labels("domain", "domain_id", c.domains), Labels("community", "community_id", c.communities),
        Numbers("rank", ">f8", rows.rank), Numbers("local_rank", ">f8", rows.local_rank),
        Numbers("block_rank", ">f8", rows.block_rank),
    ]
    return table_refill(
        PageRank._meta.db_table, columns, key="url_id", stamp=("computed_at", computed_at), temp="rank",
        advance=advance,
    )
