"""Name lookups that never answer cannot take the resolver from everyone else: one domain's names get a few
of its threads, a lookup still queued at its caller's deadline never runs, and a host that resolves at once
is looked up at once, however many hanging names a page linked to.

No internet, and the system's resolver cannot be pointed at a silent DNS server without root: the resolver
the lookups call (crawler.lookup.getaddrinfo) is replaced by one that hangs for names under .hang.example
(until the test ends, at most a minute), and for names under .hangs (one domain each: d1.hangs, d2.hangs),
and maps names under .test to loopback, where a real server answers.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

import crawler.lookup
from crawler import resolve
from crawler.http import FetchResult
from crawler.lookup import PER_GROUP, ResolverPool, name_group

HANGING = 300


@pytest.fixture
def resolver(monkeypatch):
    release = threading.Event()
    asked: list[str] = []

    def fake(host, port, *args, **kwargs):
        asked.append(host)
        if host.endswith((".hang.example", ".hangs")):
            release.wait(60)  # bounded; released when the test ends
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if host.endswith(".test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(crawler.lookup, "getaddrinfo", fake)
    monkeypatch.setattr(crawler.lookup, "_executor", ResolverPool())  # this test's own threads
    yield asked
    release.set()


def test_names_are_grouped_by_their_domain():
    assert name_group("h17.hang.example") == name_group("HANG.example.") == "hang.example" != name_group("x.test")
    assert name_group("www.example.co.uk") == "example.co.uk" and name_group("a.b.ac.kr") == "b.ac.kr"


def test_a_page_of_300_hanging_names_does_not_make_a_quick_host_fail_as_dns(resolver):
    # What the extract agent does with a page's new hosts (servers_ensure): all looked up at once.
    names = [(f"h{i}.hang.example", 80) for i in range(HANGING)]
    found = resolve.lookup_many(names, timeout=0.5)
    assert set(found.values()) == {None}
    # Then the load agent's fetch of a host that resolves at once, several times, as its URLs come.
    for _ in range(5):
        resolved = resolve.resolve_checked("http://quick.test/", method="GET", check=None, dns_timeout=2.0)
        assert not isinstance(resolved, FetchResult), resolved.detail
        assert resolved[0] == ("127.0.0.1",)
    # The hanging names held a few threads; the ones still queued at the deadline were never looked up.
    assert len([h for h in resolver if h.endswith(".hang.example")]) <= PER_GROUP
    assert crawler.lookup.resolver_pool().backlog() == 0


def test_hanging_names_of_many_domains_do_not_take_every_thread(resolver):
    """A thread stuck in a lookup is replaced: names of 40 domains that all hang still leave threads."""
    names = [(f"h.d{i}.hang.example.{i}x", 80) for i in range(40)]  # forty domains
    crawler_names = [(host.replace(".hang.example.", ".hang.example") + "", port) for host, port in names]
    found = resolve.lookup_many(crawler_names, timeout=0.5)
    assert set(found.values()) == {None}
    started = time.monotonic()
    resolved = resolve.resolve_checked("http://quick.test/", method="GET", check=None, dns_timeout=2.0)
    assert not isinstance(resolved, FetchResult), resolved.detail
    assert time.monotonic() - started < 2.0


def test_the_monitors_lookups_cancel_what_is_still_queued_at_the_deadline(resolver):
    lookups = crawler.lookup.Lookups(timeout=0.3)
    for i in range(50):
        lookups.start(i, f"h{i}.hang.example", 80)
    lookups.start("quick", "quick.test", 80)
    deadline = time.monotonic() + 10
    ended: dict = {}
    while len(ended) < 51 and time.monotonic() < deadline:
        ended.update(lookups.ended())
        lookups.wait(0.05)
    assert ended["quick"].addresses == ("127.0.0.1",)
    assert all(not ended[i].addresses and "no answer within" in ended[i].detail for i in range(50))
    assert len([h for h in resolver if h.endswith(".hang.example")]) <= PER_GROUP


def test_a_pool_runs_each_job_and_hands_back_its_error():
    pool = ResolverPool(threads=2, per_group=1, max_threads=4)
    ok = pool.submit_for("a", lambda: 1)
    bad = pool.submit_for("a", lambda: 1 / 0)
    plain = pool.submit(lambda x: x * 2, 21)
    assert ok.result(5) == 1 and plain.result(5) == 42
    with pytest.raises(ZeroDivisionError):
        bad.result(5)
    assert pool.backlog() == 0


def test_hanging_names_spread_over_30_domains_leave_a_quick_host_its_lookup(resolver):
    """Ten hanging names in each of 30 domains: more stuck lookups than the pool's threads. A thread stuck past
    its lookup's deadline no longer counts against the pool, and a domain whose lookups hang gets one at a
    time: a host that resolves at once still does."""
    names = [(f"h{n}.d{d}.hangs", 80) for d in range(30) for n in range(10)]
    assert len({name_group(host) for host, _ in names}) == 30
    found = resolve.lookup_many(names, timeout=0.5)
    assert set(found.values()) == {None}
    for _ in range(3):
        started = time.monotonic()
        resolved = resolve.resolve_checked("http://quick.test/", method="GET", check=None, dns_timeout=2.0)
        assert not isinstance(resolved, FetchResult), resolved.detail
        assert time.monotonic() - started < 2.0
        # More hanging names of the same domains, as the next pages bring them: each domain already hangs.
        resolve.lookup_many([(f"again{i}.d{i}.hangs", 80) for i in range(30)], timeout=0.5)
    asked = len([h for h in resolver if h.endswith(".hangs")])
    assert asked <= 30 * PER_GROUP  # the later names of a hanging domain were never looked up
    # Thirty new domains whose names hang, asked with the default deadline (five seconds) and not waited for,
    # as a crawl's loads ask them: a quick host asked a moment later gets a thread within its own deadline.
    for d in range(30, 60):
        for n in range(10):
            crawler.lookup.lookup_submit(f"h{n}.d{d}.hangs", 80)
    started = time.monotonic()
    resolved = resolve.resolve_checked("http://quick.test/", method="GET", check=None, dns_timeout=2.0)
    assert not isinstance(resolved, FetchResult), resolved.detail
    assert time.monotonic() - started < 2.0
