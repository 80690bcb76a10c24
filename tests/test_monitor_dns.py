"""The monitor's name lookups have their own deadline, CRAWL_DNS_TIMEOUT.

No internet, and the system's resolver cannot be pointed at a silent DNS server without root: the resolver
the client calls (crawler.lookup.getaddrinfo) is replaced by one that hangs for some names and maps others to
loopback, where a real server answers.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.test import override_settings

import crawler.lookup
from crawlcore.models import StatusCheck
from crawler.http import FailureKind, FetchPolicy
from crawler.multicheck import CheckRequest, MultiChecker
from monitoring.server_list import parse_server_row
from monitoring.services.checks import monitors_check
from monitoring.services.servers import servers_import
from testweb.monitor import failing_first

pytest.importorskip("pycurl")


@pytest.fixture
def resolver(monkeypatch):
    """Names ending in .hang never get an answer (until the test ends); *.test map to 127.0.0.1."""
    release = threading.Event()
    asked: list[str] = []

    def fake(host, port, *args, **kwargs):
        asked.append(host)
        if host.endswith(".hang"):
            release.wait(30)  # bounded; released when the test ends
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if host.endswith(".test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(crawler.lookup, "getaddrinfo", fake)
    yield asked
    release.set()


@pytest.fixture
def web():
    with failing_first("127.0.0.1", k=0) as server:
        yield server


def test_a_hanging_lookup_fails_as_dns_at_its_deadline_and_holds_up_no_other_check(resolver, web):
    policy = FetchPolicy(connect_timeout=5.0, header_timeout=2.0, body_timeout=2.0, dns_timeout=0.4)
    urls = [f"http://slow.hang:{web.port}/", f"http://ok.test:{web.port}/", f"http://missing.nowhere:{web.port}/"]
    with MultiChecker(policy) as checker:
        started = time.monotonic()
        hang, ok, missing = [r.result for r in checker.check_all([CheckRequest(u) for u in urls])]
        elapsed = time.monotonic() - started
    assert hang.failure is FailureKind.DNS and "no answer within 0.4s" in hang.detail
    assert hang.status is None and hang.peer_ip is None
    # Ended by the DNS deadline, not by the connect timeout (5 s) that bounds libcurl's own lookup.
    assert 0.4 <= hang.timings.total_ms / 1000 < 2.0 and elapsed < 2.0
    assert missing.failure is FailureKind.DNS and "cannot resolve missing.nowhere" in missing.detail
    # The name that resolved was dialled at the address looked up, and answered meanwhile.
    assert ok.status == 200 and ok.peer_ip == "127.0.0.1" and ok.timings.dns_ms is not None
    assert ok.timings.total_ms >= ok.timings.dns_ms
    assert web.connections == 1 and set(resolver) == {"slow.hang", "ok.test", "missing.nowhere"}


def test_addresses_looked_up_still_pass_the_address_check(resolver, web):
    policy = FetchPolicy(connect_timeout=2.0, header_timeout=2.0, body_timeout=2.0, dns_timeout=1.0)
    with MultiChecker(policy) as checker:
        [r] = checker.check_all([CheckRequest(f"http://inside.test:{web.port}/", lambda ip: f"{ip} is private")])
    assert r.result.failure is FailureKind.FORBIDDEN_ADDRESS and "127.0.0.1 is private" in r.result.detail
    assert web.connections == 0


def test_an_ip_literal_is_not_looked_up(resolver, web):
    with MultiChecker(FetchPolicy(2.0, 2.0, 2.0, dns_timeout=0.2)) as checker:
        [r] = checker.check_all([CheckRequest(web.url)])
    assert r.result.status == 200 and resolver == []


@override_settings(CRAWL_DNS_TIMEOUT=0.3, CRAWL_CONNECT_TIMEOUT=5.0, MONITOR_RETRIES=0)
def test_the_monitor_records_a_hanging_lookup_as_a_dns_disconnect_within_the_deadline(db, resolver, web):
    rows = [parse_server_row([u]) for u in (f"http://a.hang:{web.port}/", web.url)]
    ids = servers_import(trusted=True, rows=rows).server_ids
    started = time.monotonic()
    monitors_check(server_ids=ids, claim=False)
    elapsed = time.monotonic() - started
    hang = StatusCheck.objects.get(server_id=ids[0])
    assert (hang.category, hang.failure_kind, hang.tries) == ("disconnect", "dns", 1)
    assert "no answer within 0.3s" in hang.detail and 300 <= hang.latency_ms < 2000
    assert StatusCheck.objects.get(server_id=ids[1]).category == "normal"
    assert elapsed < 3.0  # far below the 5 s connect timeout that bounded the lookup before


@override_settings(CRAWL_DNS_TIMEOUT=0.3, MONITOR_RETRIES=2)
def test_a_dns_failure_is_a_disconnect_and_so_is_retried(db, resolver):
    [sid] = servers_import(trusted=True, rows=[parse_server_row(["http://b.hang/"])]).server_ids
    monitors_check(server_ids=[sid], claim=False)
    row = StatusCheck.objects.get(server_id=sid)
    assert (row.category, row.failure_kind, row.tries) == ("disconnect", "dns", 3)
    # The retries wait for the one lookup still hanging (a domain with a lookup past its deadline gets one at
    # a time, crawler.lookup): three tries, one question to the resolver.
    assert resolver.count("b.hang") == 1
