"""The reference crawler of the throughput benchmark: Scrapy crawling the same web.

A CrawlSpider with one LinkExtractor rule restricted to the benchmark's hosts, robots.txt obeyed, the same
per-server concurrency as ours, no delay, no autothrottle; one item (url, status, title) per page to a
JSON-lines feed. Scrapy is a benchmark-only dependency (requirements-bench.txt). Run by bench.throughput
as a subprocess:

    python -m bench.baselines.scrapy_spider --out items.jl --stats stats.json --slots 2 http://127.0.1.1:8089/ …
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

USER_AGENT = "scrapy-bench (+crawladmin bench.throughput)"


class BenchSpider(CrawlSpider):
    name = "bench"

    def __init__(self, *args, seeds: list[str], stats_path: str | None = None, **kwargs):
        self.start_urls = list(seeds)
        # The offsite filter compares host names; the link extractor's allow_domains compares the netloc,
        # which carries the port here (host:port), so each gets its own list.
        self.allowed_domains = sorted({urlsplit(u).hostname for u in seeds})
        netlocs = sorted({urlsplit(u).netloc for u in seeds})
        self.stats_path = stats_path
        # Rules are compiled by CrawlSpider.__init__, so they are set before it runs.
        self.rules = (Rule(LinkExtractor(allow_domains=netlocs), callback="parse_item", follow=True),)
        super().__init__(*args, **kwargs)

    async def start(self):
        # Scrapy's default sends start URLs with dont_filter=True, which keeps them out of the duplicate
        # filter: every home page would then be fetched a second time when a page links back to it.
        for url in self.start_urls:
            yield Request(url)

    def parse_start_url(self, response):
        # The home pages are pages too: one item each, like every other page.
        return self.parse_item(response)

    def parse_item(self, response):
        yield {"url": response.url, "status": response.status, "title": response.css("title::text").get()}

    def closed(self, reason: str) -> None:
        if self.stats_path:
            stats = {
                k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in self.crawler.stats.get_stats().items()
            }
            stats["finish_reason"] = reason
            if "elapsed_time_seconds" not in stats:  # the core stats extension sets it only after this signal
                started = self.crawler.stats.get_value("start_time")
                stats["elapsed_time_seconds"] = (datetime.now(UTC) - started).total_seconds()
            with open(self.stats_path, "w") as f:
                json.dump(stats, f, indent=2, sort_keys=True, default=str)


def settings_for(*, out: str, slots: int, servers: int, max_seconds: float = 0) -> dict:
    return {
        "CLOSESPIDER_TIMEOUT": max_seconds,  # 0: no limit
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS_PER_DOMAIN": slots,
        "CONCURRENT_REQUESTS": slots * servers,
        "CONCURRENT_REQUESTS_PER_IP": 0,  # per domain (each server is its own address anyway)
        "DOWNLOAD_DELAY": 0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "FEEDS": {out: {"format": "jsonlines", "overwrite": True}},
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": USER_AGENT,
        "DEPTH_LIMIT": 0,
        "HTTPCACHE_ENABLED": False,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Crawl the benchmark web with Scrapy.")
    ap.add_argument("seeds", nargs="+")
    ap.add_argument("--out", required=True, help="JSON-lines feed, one item per page")
    ap.add_argument("--stats", help="write Scrapy's stats here as JSON when the crawl closes")
    ap.add_argument("--slots", type=int, default=2, help="requests in flight per server")
    ap.add_argument("--max-seconds", type=float, default=0, help="close the spider after this long (0: never)")
    args = ap.parse_args(argv)
    servers = len({urlsplit(u).netloc for u in args.seeds})
    process = CrawlerProcess(
        settings_for(out=args.out, slots=args.slots, servers=servers, max_seconds=args.max_seconds)
    )
    process.crawl(BenchSpider, seeds=args.seeds, stats_path=args.stats)
    process.start()


if __name__ == "__main__":
    main()
