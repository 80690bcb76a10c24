"""The seed-001 baseline: a sequential web robot that processes every URL in line.

Seed 001 (§IV.2.2) compares its multi-agent robot with a "sequential" robot whose loader takes one URL
after another from its ToLoad list, waits out the timeouts of dead links, re-checks them itself, and
only then goes on. This module is that loader, built from the same pure parts our agents use
(``crawler.fetch.Fetcher`` under one ``FetchPolicy``, ``crawler.parse.extract``,
``crawler.urlnorm.canonicalize``, ``crawler.robots``), and nothing else: no Django, no Celery, no
database. State lives in memory (a FIFO deque and a set of seen URLs), like the paper's "memory
buffers" (ToLoad / Extracted / NewExtracted); a database would only add write latency to the baseline
and make the comparison kinder to us, not fairer.

    python -m bench.baselines.sequential --seconds 30 http://127.0.0.10:8000/ …     # prints a JSON report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

from crawler.fetch import Fetcher
from crawler.http import FetchPolicy, FetchResult
from crawler.lifecycle import is_valid_response
from crawler.parse import extract, is_html
from crawler.robots import RobotsRules, product_token, rules_from_response
from crawler.urlnorm import UrlError, canonicalize

__all__ = ["Processed", "SequentialLoader", "SequentialReport"]

# Seed 001's life-cycle declares a URL dead after three checks without an answer (Init -> NoResponse1 ->
# NoResponse2 -> Dead). The sequential robot has no inactive-scan agent to make the two re-checks later,
# so its loader makes them itself, in line, before it takes the next URL: 2 retries, 3 attempts, each
# waiting out the full timeout. That waiting is exactly the cost the paper's agents take off the loader.
DEFAULT_RETRIES = 2
# Hard cap on URLs handled in one crawl, besides the time budget: every loop here is bounded.
MAX_URLS = 1_000_000


@dataclass
class Processed:
    """One URL the loader is done with."""

    t: float  # seconds after the crawl started, when the loader finished with the URL (after retries)
    url: str
    outcome: str  # "visited" (2xx/3xx) | "failed" (no answer after all attempts, or 4xx/5xx)
    status: int | None
    failure: str  # FailureKind value, "" for a response
    attempts: int


@dataclass
class SequentialReport:
    started_at: float  # time.time() when the crawl started
    seconds: float  # how long it ran (a URL in progress at the budget may overrun it by its timeouts)
    stopped: str  # "done" | "max-seconds" | "max-urls"
    processed: list[Processed] = field(default_factory=list)
    excluded: int = 0  # disallowed by robots.txt: never requested, not counted as processed
    requests: int = 0  # HTTP exchanges attempted, robots.txt included
    waited_on_failures: float = 0.0  # seconds spent in attempts that got no answer (the dead-link cost)

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.outcome for p in self.processed))

    def to_json(self) -> dict:
        return {
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "counts": self.counts(),
            "excluded": self.excluded,
            "requests": self.requests,
            "waited_on_failures": round(self.waited_on_failures, 3),
            "processed": [asdict(p) for p in self.processed],
        }


@dataclass
class _Item:
    url: str
    depth: int
    redirect_hops: int = 0


class SequentialLoader:
    """One URL at a time from a FIFO queue: robots.txt, fetch (with in-line retries), parse, enqueue new links.

    ``remember_unreachable``: off (the paper's baseline), a server whose robots.txt did not answer is
    asked again for the next URL, so every attempt on a dead server waits out a timeout. On, the first
    silence is remembered for the whole crawl, like our load agent's robots memo (CRAWL_ROBOTS_RETRY);
    useful to see how much of the agents' lead comes from that memo alone.
    """

    def __init__(
        self,
        policy: FetchPolicy,
        *,
        retries: int = DEFAULT_RETRIES,
        max_depth: int = 25,
        max_redirects: int = 5,
        remember_unreachable: bool = False,
    ) -> None:
        self.policy = policy
        self.retries = retries
        self.max_depth = max_depth
        self.max_redirects = max_redirects
        self.remember_unreachable = remember_unreachable
        self.agent = product_token(policy.user_agent)
        self._robots: dict[str, RobotsRules | FetchResult] = {}

    def crawl(self, seeds: list[str], *, max_seconds: float, max_urls: int = MAX_URLS) -> SequentialReport:
        started = time.monotonic()
        report = SequentialReport(started_at=time.time(), seconds=0.0, stopped="done")
        queue: deque[_Item] = deque()
        seen: set[str] = set()
        for seed in seeds:
            url = canonicalize(seed)
            if url not in seen:
                seen.add(url)
                queue.append(_Item(url, depth=0))
        with Fetcher(self.policy) as fetcher:
            handled = 0
            while queue:
                if time.monotonic() - started >= max_seconds:
                    report.stopped = "max-seconds"
                    break
                if handled >= max_urls:
                    report.stopped = "max-urls"
                    break
                handled += 1
                item = queue.popleft()
                for new in self._process(fetcher, item, report, started):
                    if new.url not in seen:
                        seen.add(new.url)
                        queue.append(new)
        report.seconds = time.monotonic() - started
        return report

    # -- one URL -----------------------------------------------------------------------------------

    def _process(self, fetcher: Fetcher, item: _Item, report: SequentialReport, started: float) -> list[_Item]:
        result: FetchResult | None = None
        attempts = 0
        while attempts <= self.retries:  # 1 + retries attempts at most
            attempts += 1
            rules = self._rules(fetcher, item.url, report)
            if isinstance(rules, FetchResult):
                # robots.txt did not answer: the URL is not requested (it would wait out the same timeout),
                # the attempt counts as failed, as in our load agent.
                result = rules
            elif not rules.allowed(item.url, self.agent):
                report.excluded += 1
                return []
            else:
                result = self._fetch(fetcher, item.url, report)
            if result.status is not None:
                break  # an answer, even 404 or 500, is not a dead link: nothing to re-check
        assert result is not None
        outcome = "visited" if is_valid_response(result.status) else "failed"
        report.processed.append(
            Processed(
                t=time.monotonic() - started,
                url=item.url,
                outcome=outcome,
                status=result.status,
                failure=result.failure.value if result.failure else "",
                attempts=attempts,
            )
        )
        return self._next(item, result) if outcome == "visited" else []

    def _fetch(self, fetcher: Fetcher, url: str, report: SequentialReport) -> FetchResult:
        report.requests += 1
        result = fetcher.fetch(url)
        if result.status is None:
            report.waited_on_failures += result.timings.total_ms / 1000
        return result

    def _rules(self, fetcher: Fetcher, url: str, report: SequentialReport) -> RobotsRules | FetchResult:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        cached = self._robots.get(origin)
        if cached is not None:
            return cached
        result = self._fetch(fetcher, f"{origin}/robots.txt", report)
        for _hop in range(self.max_redirects):
            location = result.headers.get("location")
            if result.status is None or not (300 <= result.status < 400 and location):
                break
            try:
                result = self._fetch(fetcher, canonicalize(location, base=result.url), report)
            except UrlError:
                break
        if result.status is None or result.status >= 500:
            if self.remember_unreachable:
                self._robots[origin] = result
            return result
        rules = rules_from_response(result.status, result.body)
        self._robots[origin] = rules
        return rules

    def _next(self, item: _Item, result: FetchResult) -> list[_Item]:
        status = result.status or 0
        location = result.headers.get("location")
        if 300 <= status < 400 and location:
            # Like our load agent: a redirect is recorded on the URL that answered it, its target queued.
            if item.redirect_hops >= self.max_redirects:
                return []
            try:
                target = canonicalize(location, base=item.url)
            except UrlError:
                return []
            return [_Item(target, item.depth, item.redirect_hops + 1)]
        if not (200 <= status < 300) or item.depth >= self.max_depth:
            return []
        content_type = result.headers.get("content-type")
        if not is_html(content_type):
            return []
        page = extract(result.body, item.url, content_type=content_type)
        if page.nofollow:
            return []
        # Pages only: resources (images, stylesheets, scripts) are checked by the agents, never crawled from.
        return [_Item(link.url, item.depth + 1) for link in page.links if not link.resource]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.baselines.sequential", description=__doc__.split("\n\n")[0])
    p.add_argument("seeds", nargs="+")
    p.add_argument("--seconds", type=float, required=True, help="time budget")
    p.add_argument("--connect-timeout", type=float, default=15.0)
    p.add_argument("--header-timeout", type=float, default=10.0)
    p.add_argument("--body-timeout", type=float, default=20.0)
    p.add_argument("--retries", type=int, default=DEFAULT_RETRIES, help="in-line re-checks of an unanswered URL")
    p.add_argument("--user-agent", default="crawladmin/bench-sequential")
    p.add_argument("--remember-unreachable", action="store_true", help="remember a server whose robots.txt is silent")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    policy = FetchPolicy(
        connect_timeout=args.connect_timeout,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        user_agent=args.user_agent,
    )
    loader = SequentialLoader(policy, retries=args.retries, remember_unreachable=args.remember_unreachable)
    report = loader.crawl(args.seeds, max_seconds=args.seconds)
    json.dump(report.to_json(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
