"""The benchmark's sequential baseline (bench/baselines/sequential.py) crawls the test web correctly; its speed is the
benchmark's business, not this test's."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.baselines.sequential import SequentialLoader
from crawler.http import FetchPolicy
from testweb import SiteSpec, TestWebServer
from testweb.site import canonical_url

# Short timeouts: the silent server's three URLs cost (1 + retries) header timeouts each.
POLICY = FetchPolicy(connect_timeout=1.0, header_timeout=0.3, body_timeout=2.0, user_agent="crawladmin/test")


@pytest.fixture(scope="module")
def crawled():
    with TestWebServer(SiteSpec(n_servers=3, pages_per_server=8, slow_server=False, first_octet=130)) as web:
        report = SequentialLoader(POLICY, retries=1).crawl(web.seeds(), max_seconds=30)
        yield web, report


def test_visits_what_the_test_web_says_is_reachable(crawled):
    web, report = crawled
    expected = web.web.expected()
    outcomes = {canonical_url(p.url): p.outcome for p in report.processed}
    assert report.stopped == "done"
    assert outcomes == {url: o for url, o in expected.items() if o != "excluded"}
    assert report.excluded == Counter(expected.values())["excluded"]


def test_each_url_requested_once_and_disallowed_never(crawled):
    web, report = crawled
    gets = Counter(web.url_of(r) for r in web.access_log() if r.path != "/robots.txt")
    assert set(gets.values()) == {1}
    assert not any("/private/" in url for url in gets)
    robots = Counter(r.host for r in web.access_log() if r.path == "/robots.txt")
    assert set(robots.values()) == {1}


def test_silent_server_urls_are_retried_in_line_then_failed(crawled):
    web, report = crawled
    silent = [p for p in report.processed if f"//{web.web.silent_host}:" in p.url]
    assert silent and all(p.outcome == "failed" and p.attempts == 2 for p in silent)
    # Every attempt waited out the header timeout (robots.txt of the silent server never answers).
    assert report.waited_on_failures >= len(silent) * 2 * POLICY.header_timeout * 0.9
