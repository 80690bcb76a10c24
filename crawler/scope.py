"""Crawl scope: which discovered links a crawl follows (pure).

Each seed sets a mode that the URLs found from it inherit:
  host   – stay on the seed's host
  domain – stay inside the seed's registered domain (www.a.example.ac.kr and b.example.ac.kr are one)
  any    – follow links off the domain too, up to `offsite_depth` links away from it
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import tldextract

MODES = ("host", "domain", "any")

# The suffix list bundled with tldextract, never a network fetch (no suffix_list_urls, no cache dir).
_extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registered domain of a host (example.co.kr for www.example.co.kr); IPs and bare names
    like `localhost` are their own domain."""
    host = host.strip("[]").lower()
    return _extract(host).top_domain_under_public_suffix or host


@dataclass(frozen=True)
class Scope:
    mode: str  # one of MODES
    root: str  # the seed's host (mode host) or registered domain (other modes)
    offsite_hops: int = 0  # links followed outside the root so far (mode any)

    @classmethod
    def for_seed(cls, mode: str, host: str) -> Scope:
        if mode not in MODES:
            raise ValueError(f"scope {mode!r}: expected one of {', '.join(MODES)}")
        return cls(mode, host.lower() if mode == "host" else registered_domain(host), 0)

    def follow(self, host: str, *, offsite_depth: int) -> Scope | None:
        """The scope a link to `host` inherits, or None when the link leaves the crawl's scope."""
        inside = host.lower() == self.root if self.mode == "host" else registered_domain(host) == self.root
        if inside:
            return Scope(self.mode, self.root, 0)
        if self.mode != "any" or self.offsite_hops + 1 > offsite_depth:
            return None
        return Scope(self.mode, self.root, self.offsite_hops + 1)
