"""Synthetic web-like link graphs with host structure, for the benchmark and the tests (pure).

Pages belong to hosts of heavy-tailed sizes (Pareto weights), hosts to registered domains. Most links
stay on their host (Kamvar et al. found ~80% intra-host links on real crawls) and favour the host's
home page and low-numbered pages; the rest go to other hosts chosen by popularity, mostly to their
home pages. A share of pages is never fetched: they are link targets with no links of their own
(dangling), as unfetched URLs are in a crawl.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .pagerank import dedupe_edges


@dataclass(frozen=True)
class WebGraph:
    n: int
    src: np.ndarray  # int32, distinct (src, dst) pairs
    dst: np.ndarray
    host: np.ndarray  # int32 per page, pages of a host contiguous, page 0 of a host is its home page
    domain: np.ndarray  # int32 per page
    hosts: int
    domains: int


def web_graph(
    n: int,
    *,
    links_per_page: float = 10.0,
    intra_host: float = 0.8,
    dangling: float = 0.15,
    pages_per_host: int = 40,
    hosts_per_domain: int = 3,
    seed: int = 0,
) -> WebGraph:
    rng = np.random.default_rng(seed)
    hosts = max(1, n // pages_per_host)
    weight = rng.pareto(1.2, hosts) + 1.0
    p = weight / weight.sum()
    # Every host has its home page; the other pages fall on hosts by weight.
    host = np.sort(np.concatenate([np.arange(hosts), rng.choice(hosts, n - hosts, p=p)])).astype(np.int32)
    first = np.searchsorted(host, np.arange(hosts)).astype(np.int64)
    size = np.bincount(host, minlength=hosts).astype(np.int64)

    # Hosts of one domain are contiguous (host numbers sorted by domain).
    ndomains = max(1, hosts // hosts_per_domain)
    host_domain = np.sort(rng.integers(0, ndomains, hosts))
    _, host_domain = np.unique(host_domain, return_inverse=True)
    ndomains = int(host_domain.max()) + 1
    domain_first = np.searchsorted(host_domain, np.arange(ndomains))
    domain_size = np.bincount(host_domain, minlength=ndomains)

    fetched = rng.random(n) >= dangling
    # Some links repeat (home pages, favoured pages) and collapse in the dedup: ask for a few more.
    wanted = links_per_page * 1.4 / max(1e-9, 1.0 - dangling)
    degree = np.where(fetched, rng.poisson(wanted, n), 0)
    src = np.repeat(np.arange(n, dtype=np.int32), degree)
    m = len(src)
    target_host = host[src].astype(np.int64)
    leave = rng.random(m) >= intra_host
    # Links that leave their host stay in its domain a third of the time (a university's departments).
    sibling = leave & (rng.random(m) < 1 / 3)
    d = host_domain[target_host[sibling]]
    target_host[sibling] = domain_first[d] + (rng.random(len(d)) * domain_size[d]).astype(np.int64)
    away = leave & ~sibling
    target_host[away] = rng.choice(hosts, int(away.sum()), p=p)
    home = rng.random(m) < np.where(leave, 0.5, 0.2)
    offset = (size[target_host] * rng.random(m) ** 2).astype(np.int64)
    offset[home] = 0
    dst = (first[target_host] + np.minimum(offset, size[target_host] - 1)).astype(np.int32)
    src, dst = dedupe_edges(src, dst, n)
    if len(src) > links_per_page * n:  # thin out to about the asked-for count, uniformly
        keep = rng.random(len(src)) < links_per_page * n / len(src)
        src, dst = src[keep], dst[keep]

    return WebGraph(
        n=n,
        src=src,
        dst=dst,
        host=host,
        domain=host_domain[host].astype(np.int32),
        hosts=hosts,
        domains=ndomains,
    )
