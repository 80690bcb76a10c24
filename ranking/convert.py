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

IDs are dense (0..count-1) in a deterministic order — sites by server id, domains and communities by
name, pages by URL id — so they index numpy arrays directly. They are positions in one run's
matrices, not stable identities: those are the Url and Server primary keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from crawler.scope import registered_domain

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
    domain_of: Callable[[str], str] = registered_domain,
) -> Converted:
    """Assign the dense IDs and translate links from Url ids to page ids."""
    canonical = canonical_servers(sites)
    url_ids = np.asarray(url_ids, dtype=np.int64)
    url_server = np.asarray(url_server, dtype=np.int64)
    order = np.argsort(url_ids, kind="stable")
    url_ids, url_server = url_ids[order], url_server[order]
    if len(url_ids) > 1 and (np.diff(url_ids) == 0).any():
        raise ValueError("duplicate URL ids")

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

    src, dst, dropped = _to_page_ids(url_ids, np.asarray(link_from, np.int64), np.asarray(link_to, np.int64))
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
    )


def _to_page_ids(url_ids: np.ndarray, link_from: np.ndarray, link_to: np.ndarray):
    if len(url_ids) == 0 or len(link_from) == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, len(link_from)
    src = np.searchsorted(url_ids, link_from)
    dst = np.searchsorted(url_ids, link_to)
    last = len(url_ids) - 1
    known = (url_ids[np.minimum(src, last)] == link_from) & (url_ids[np.minimum(dst, last)] == link_to)
    return src[known].astype(np.int32), dst[known].astype(np.int32), int(len(known) - known.sum())
