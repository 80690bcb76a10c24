"""The converting step of seed 003 (pure): dense site, domain, community and page IDs, and the link
graph in page IDs.

- site: a web server (scheme, host, port). A server recorded as an alias of another (same IP, same
  home page: seed 003's site dedup) is the same site as the one it aliases.
- domain: the site's registered domain (crawler.scope.registered_domain: tldextract's bundled
  public-suffix list, never a network fetch); www.a.ac.kr and b.a.ac.kr are one domain. An IP
  address is its own domain.
- community: an operator-defined server group (Server.group); a site without a group belongs to its
  domain's community. Communities are keyed by name, so a group named like a domain is that domain's
  community.
- page: every known URL, fetched or not. Link analysis ranks link targets too: a page that was never
  fetched (or is dead) still receives rank from the pages that link to it; it just gives none.
  A URL whose content duplicates an earlier page's (same checksum: the extract agent's duplicate mark,
  seed 003's page dedup) is not a page of its own: it is merged into the page it duplicates. Links to it
  are links to that page, its links are that page's links (a pair found on both copies counts once), and
  a link between the two copies is dropped (it names the page itself). It gets no page ID and no rank.

IDs are dense (0..count-1) in a deterministic order — sites by server id, domains and communities by
name, pages by URL id — so they index numpy arrays directly. They are positions in one run's
matrices, not stable identities: those are the Url and Server primary keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from crawler.scope import registered_domain

from .pagerank import dedupe_edges

BLOCKS = ("site", "domain", "community")


@dataclass(frozen=True)
class Site:
    server_id: int
    host: str
    group: str = ""
    alias_of: int | None = None


@dataclass(frozen=True)
class Converted:
    url_ids: np.ndarray  # int64, page id -> Url id (ascending)
    page_server: np.ndarray  # int64, page id -> the server id of its site (aliases resolved)
    page_site: np.ndarray  # int32, page id -> site id
    page_domain: np.ndarray  # int32, page id -> domain id
    page_community: np.ndarray  # int32, page id -> community id
    site_servers: np.ndarray  # int64, site id -> server id
    domains: list[str]  # domain id -> registered domain
    communities: list[str]  # community id -> group name, or the domain
    src: np.ndarray  # int32 page ids, one per link
    dst: np.ndarray  # int32
    dropped_links: int  # links naming a URL that is not in url_ids (deleted between reads)
    merged_urls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # duplicate URL ids
    merged_links: int = 0  # links dropped by the merge: a pair already counted, or one between two copies

    @property
    def pages(self) -> int:
        return len(self.url_ids)

    def blocks(self, kind: str) -> np.ndarray:
        """The block of every page for BlockRank: by site, domain or community."""
        if kind not in BLOCKS:
            raise ValueError(f"block {kind!r}: expected one of {', '.join(BLOCKS)}")
        return {"site": self.page_site, "domain": self.page_domain, "community": self.page_community}[kind]


def canonical_servers(sites: Iterable[Site]) -> dict[int, Site]:
    """Each server id -> the site it belongs to, following alias_of (chains and cycles are bounded)."""
    by_id = {s.server_id: s for s in sites}
    out: dict[int, Site] = {}
    for site in by_id.values():
        seen = {site.server_id}
        target = site
        while target.alias_of is not None and target.alias_of in by_id and target.alias_of not in seen:
            target = by_id[target.alias_of]
            seen.add(target.server_id)
        out[site.server_id] = target
    return out


def convert(
    sites: Iterable[Site],
    url_ids: np.ndarray,
    url_server: np.ndarray,
    link_from: np.ndarray,
    link_to: np.ndarray,
    *,
    duplicates: tuple[np.ndarray, np.ndarray] | None = None,
    domain_of: Callable[[str], str] = registered_domain,
) -> Converted:
    """Assign the dense IDs and translate links from Url ids to page ids.

    `duplicates`: (duplicate Url ids, the Url id of the page each duplicates). Each is merged into the page
    it names (following chains); a pair naming an unknown URL, or a later URL than the duplicate, is ignored.
    """
    canonical = canonical_servers(sites)
    url_ids = np.asarray(url_ids, dtype=np.int64)
    url_server = np.asarray(url_server, dtype=np.int64)
    order = np.argsort(url_ids, kind="stable")
    url_ids, url_server = url_ids[order], url_server[order]
    if len(url_ids) > 1 and (np.diff(url_ids) == 0).any():
        raise ValueError("duplicate URL ids")
    canonical_url = merge_duplicates(url_ids, *(duplicates or (np.zeros(0), np.zeros(0))))
    kept = canonical_url == url_ids
    merged_urls = url_ids[~kept]
    # Every URL (duplicates too) -> the page id of the page it is; pages are the kept URLs in id order.
    url_page = np.searchsorted(url_ids[kept], canonical_url).astype(np.int32)
    url_ids, url_server = url_ids[kept], url_server[kept]

    # Sites (every known server's canonical server), their domains and communities.
    site_servers = np.array(sorted({s.server_id for s in canonical.values()}), dtype=np.int64)
    domain_of_site = {sid: domain_of(canonical[sid].host) for sid in site_servers.tolist()}
    community_of_site = {sid: canonical[sid].group or domain_of_site[sid] for sid in site_servers.tolist()}
    domains = sorted(set(domain_of_site.values()))
    communities = sorted(set(community_of_site.values()))
    domain_index = {d: i for i, d in enumerate(domains)}
    community_index = {c: i for i, c in enumerate(communities)}
    site_domain = np.array([domain_index[domain_of_site[s]] for s in site_servers.tolist()], dtype=np.int32)
    site_community = np.array([community_index[community_of_site[s]] for s in site_servers.tolist()], dtype=np.int32)

    # Each URL's server -> its site's server -> site id (vectorised: one dict lookup per server, not per URL).
    servers = np.array(sorted(canonical), dtype=np.int64)
    server_site = np.searchsorted(site_servers, np.array([canonical[s].server_id for s in servers.tolist()]))
    pos = np.searchsorted(servers, url_server)
    if len(url_server) and ((pos >= len(servers)) | (servers[np.minimum(pos, len(servers) - 1)] != url_server)).any():
        raise ValueError("a URL names a server that is not in the server list")
    page_site = server_site[pos].astype(np.int32) if len(servers) else np.zeros(0, dtype=np.int32)

    src, dst, dropped, merged_links = _to_page_ids(
        np.concatenate((url_ids, merged_urls)),
        np.concatenate((np.arange(len(url_ids), dtype=np.int32), url_page[~kept])),
        np.asarray(link_from, np.int64),
        np.asarray(link_to, np.int64),
    )
    return Converted(
        url_ids=url_ids,
        page_server=site_servers[page_site] if len(page_site) else np.zeros(0, dtype=np.int64),
        page_site=page_site,
        page_domain=site_domain[page_site] if len(page_site) else np.zeros(0, dtype=np.int32),
        page_community=site_community[page_site] if len(page_site) else np.zeros(0, dtype=np.int32),
        site_servers=site_servers,
        domains=domains,
        communities=communities,
        src=src,
        dst=dst,
        dropped_links=dropped,
        merged_urls=merged_urls,
        merged_links=merged_links,
    )


def merge_duplicates(url_ids: np.ndarray, dup_from: np.ndarray, dup_to: np.ndarray) -> np.ndarray:
    """Each of `url_ids` (sorted) -> the Url id of the page it is: itself, or for a duplicate the first page
    of its chain of duplicate marks. Only marks to an earlier known URL count (the extract agent marks a page
    as a duplicate of the earliest page with its checksum), so chains end and there are no cycles."""
    canonical = url_ids.copy()
    dup_from = np.asarray(dup_from, dtype=np.int64)
    dup_to = np.asarray(dup_to, dtype=np.int64)
    if len(url_ids) == 0 or len(dup_from) == 0:
        return canonical
    last = len(url_ids) - 1
    known_from = url_ids[np.minimum(np.searchsorted(url_ids, dup_from), last)] == dup_from
    known_to = url_ids[np.minimum(np.searchsorted(url_ids, dup_to), last)] == dup_to
    ok = known_from & known_to & (dup_to < dup_from)
    target = dict(zip(dup_from[ok].tolist(), dup_to[ok].tolist(), strict=True))
    resolved: dict[int, int] = {}
    for start in sorted(target):  # ascending: a chain's earlier links are resolved first
        first = target[start]
        resolved[start] = resolved.get(first, first)
    if resolved:
        keys = np.fromiter(resolved, dtype=np.int64, count=len(resolved))
        canonical[np.searchsorted(url_ids, keys)] = np.fromiter(resolved.values(), dtype=np.int64, count=len(keys))
    return canonical


def _to_page_ids(url_ids: np.ndarray, url_page: np.ndarray, link_from: np.ndarray, link_to: np.ndarray):
    """Links from Url ids to page ids: (src, dst, links naming an unknown URL, links dropped by the merge).
    `url_ids` need not be sorted; `url_page` is each one's page id."""
    if len(url_ids) == 0 or len(link_from) == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, len(link_from), 0
    if len(url_ids) > 1 and (np.diff(url_ids) < 0).any():  # duplicates appended after the pages
        order = np.argsort(url_ids, kind="stable")
        url_ids, url_page = url_ids[order], url_page[order]
    src = np.searchsorted(url_ids, link_from)
    dst = np.searchsorted(url_ids, link_to)
    last = len(url_ids) - 1
    src, dst = np.minimum(src, last), np.minimum(dst, last)
    known = (url_ids[src] == link_from) & (url_ids[dst] == link_to)
    src, dst = url_page[src[known]], url_page[dst[known]]
    pages = int(url_page.max()) + 1
    if len(url_page) == pages:  # one URL per page, nothing merged: the pairs are distinct already
        return src.astype(np.int32), dst.astype(np.int32), int(len(known) - known.sum()), 0
    # A link between two copies of one page names the page itself: not a vote (the Link table holds a
    # self-link only for a missing #fragment, for the link reports). Pairs found on both copies count once.
    apart = src != dst
    msrc, mdst = dedupe_edges(src[apart], dst[apart], pages)
    return msrc, mdst, int(len(known) - known.sum()), int(len(src) - len(msrc))
