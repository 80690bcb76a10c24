"""The frontier benchmark's measurement of discovered links (bench.frontier): the parse it subtracts from the
extract agent's time must cost what the agent's own parse cost. It was timed on a cache of canonical URLs
the agent had just filled, which made it look four times cheaper in a run of 20,000 links and counted the
rest as writing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.frontier import parse_alone
from crawler.parse import extract
from crawler.urlnorm import _canonical_absolute


def _pages(n: int) -> list[SimpleNamespace]:
    pages = []
    for k in range(n):
        body = "".join(f'<a href="http://s{k}.example/n/{k}/{j}">l</a>' for j in range(30)).encode()
        pages.append(SimpleNamespace(body=body, url=SimpleNamespace(url=f"http://s{k}.example/"), content_type=""))
    return pages


def test_the_parse_timed_alone_canonicalises_every_link_anew_after_the_agent_parsed_the_same_pages():
    pages = _pages(5)
    for page in pages:  # what pages_extract does first, leaving the cache warm
        extract(page.body, page.url.url)
    assert parse_alone(pages) > 0
    info = _canonical_absolute.cache_info()
    assert info.hits == 0 and info.misses == 5 * (30 + 1)  # each page's links and its own URL (the base)


@pytest.mark.integration
def test_extract_processes_at_once_store_what_one_process_stores():
    # bench.frontier --procs: the groups of pages shared out between processes, started together. A URL two of
    # them find new at once is inserted by one and looked up by the other: every link is stored, as by one.
    from bench.frontier import run

    small = dict(urls=3000, servers=30, claims=2, claim_size=10, links=1200, link_runs=1)
    alone, together = run(**small), run(**small, procs=2)
    assert together["links"]["procs"] == 2
    stored = together["links"]["runs"][0]["links_stored"]
    assert stored == alone["links"]["runs"][0]["links_stored"] > 1000
    assert together["links"]["runs"][0]["links_reported"] == stored
