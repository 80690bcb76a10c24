"""Local test web for the crawler: deterministic sites on 127.0.0.x loopback IPs.

from testweb import SiteSpec, TestWebServer
with TestWebServer(SiteSpec(first_octet=200)) as tw:
    crawl(tw.seeds())
    assert not tw.requests_for(f"http://127.0.0.200:{tw.port}/private/")
"""

from __future__ import annotations

from .server import AccessRecord, TestWebServer
from .site import USER_AGENT, SiteSpec, Web, canonical_url, extract_links

__all__ = ["AccessRecord", "SiteSpec", "TestWebServer", "USER_AGENT", "Web", "canonical_url", "extract_links"]
