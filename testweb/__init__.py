"""Local test webs for the crawler, shared by the tests, the benchmarks and the demo: deterministic
sites on 127.0.0.x loopback IPs, never the internet.

  site, server   the test web: sites with dead, slow, changing, redirecting and robots-ruled pages
  hostile        servers that lie, flood, trickle, trap and never answer
  scan           a tiny server whose answers a scan test sets page by page
  monitor        a server answering 500, one that flaps on command, an address that refuses
  generated      the throughput benchmark's static web, written to disk and served by nginx
  sitemaps       a site publishing sitemaps (gzip index, nested, text, bad ones) with orphan and duplicate pages
  duplicates     one site serving pages under two URLs (seed 003's page dedup)
  vhosts         two host names on one address and port, one site or two by the Host header (seed 003's site dedup)
  cluster        the harness of real services: PostgreSQL databases, redis-server, celery processes

from testweb import SiteSpec, TestWebServer
with TestWebServer(SiteSpec(first_octet=200)) as tw:
    crawl(tw.seeds())
    assert not tw.requests_for(f"http://127.0.0.200:{tw.port}/private/")
"""

from __future__ import annotations

from .server import AccessRecord, TestWebServer
from .site import USER_AGENT, SiteSpec, Web, canonical_url, extract_links

__all__ = ["AccessRecord", "SiteSpec", "TestWebServer", "USER_AGENT", "Web", "canonical_url", "extract_links"]
