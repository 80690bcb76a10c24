"""crawler.engine beyond the Fetcher's contract (tests/test_fetch.py runs that on both fetchers): one engine
thread serving many caller threads, the guard on a kept-alive connection, the pinned name lookup, and a caller
that stops waiting. Tiny raw-socket servers on 127.0.0.1, no network, no Django."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from crawler.curl_failures import refused_nul_header
from crawler.curl_transfer import Request
from crawler.engine import Engine, EngineFetcher
from crawler.http import FailureKind, FetchPolicy

from .test_fetch import FAST, TinyServer, answer_forever, response


@pytest.fixture
def serve():
    servers: list[TinyServer] = []

    def start(handler) -> TinyServer:
        servers.append(TinyServer(handler))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine(max_parallel=64)
    yield e
    e.close()


def test_a_kept_alive_connection_is_guarded_again_for_a_request_that_may_not_reach_its_address(serve, engine):
    """A connection opened for a trusted request (no guard) is kept alive; an untrusted request to the same
    origin would reuse it without dialling, so the guard runs on the peer before the request goes out."""
    server = serve(answer_forever(response("200 OK", b"inside")))
    fetcher = EngineFetcher(FAST, engine=engine)
    assert fetcher.fetch(server.url("/a"), address_check=None).body == b"inside"
    seen: list[str] = []

    def guard(ip: str) -> str | None:
        seen.append(ip)
        return "loopback" if ip == "127.0.0.1" and len(seen) > 1 else None  # passes the lookup, not the peer

    result = fetcher.fetch(server.url("/b"), address_check=guard)
    assert result.failure is FailureKind.FORBIDDEN_ADDRESS and "loopback" in result.detail
    assert result.status is None and result.body == b""
    assert len(server.requests) == 1 and server.accepts == 1  # nothing went out on the kept connection
    assert fetcher.fetch(server.url("/c"), address_check=None).body == b"inside"  # still usable by the trusted


def test_libcurl_dials_the_addresses_our_lookup_allowed_not_its_own(serve, engine, monkeypatch):
    server = serve(answer_forever(response("200 OK", b"pinned")))
    real = socket.getaddrinfo

    def lookup(host, port, *args, **kwargs):
        if host == "pinned.test":  # a name no resolver knows: only our answer can make it reachable
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    result = EngineFetcher(FAST, engine=engine).fetch(f"http://pinned.test:{server.port}/x")
    assert result.failure is None and result.body == b"pinned" and result.peer_ip == "127.0.0.1"
    assert b"Host: pinned.test:" in server.requests[0]
    assert result.timings.dns_ms is not None


def test_one_engine_serves_many_threads_and_a_slow_server_holds_up_no_other(serve, engine):
    fast = serve(answer_forever(response("200 OK", b"ok")))

    def slow(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        server.stopping.wait(0.4)
        conn.sendall(response("200 OK", b"late"))

    slow_server = serve(slow)
    fetcher = EngineFetcher(FAST, engine=engine)
    bodies: dict[int, list[bytes]] = {}
    took: dict[int, float] = {}

    def worker(n: int) -> None:
        started = time.monotonic()
        url = slow_server.url() if n == 0 else fast.url(f"/{n}")
        bodies[n] = [fetcher.fetch(url).body for _ in range(1 if n == 0 else 5)]
        took[n] = time.monotonic() - started

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert bodies[0] == [b"late"] and all(bodies[n] == [b"ok"] * 5 for n in range(1, 20))
    assert took[0] >= 0.35 and max(took[n] for n in range(1, 20)) < took[0] + 2.0
    assert len(fast.requests) == 19 * 5
    assert fast.accepts <= 19  # keep-alive: a thread's next request reuses a connection
    assert threading.active_count() < 60  # one engine thread, not one per transfer


def test_a_caller_that_stops_waiting_ends_its_transfer(serve, engine):
    def silent(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        server.stopping.wait(5)

    server = serve(silent)
    policy = FetchPolicy(connect_timeout=5, header_timeout=5, body_timeout=5)

    future = engine.submit(Request(server.url()), policy)
    time.sleep(0.2)
    engine.cancel(future)
    result = future.result(timeout=2)
    assert result.failure is FailureKind.OTHER and "stopped waiting" in result.detail


def test_a_closed_engine_refuses_new_work_and_ends_what_it_held(serve):
    def silent(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        server.stopping.wait(5)

    server = serve(silent)

    e = Engine()
    future = e.submit(Request(server.url()), FetchPolicy(connect_timeout=5, header_timeout=5, body_timeout=5))
    time.sleep(0.2)
    e.close()
    assert future.result(timeout=2).failure is FailureKind.OTHER
    with pytest.raises(RuntimeError):
        e.submit(Request(server.url()), FAST)


def test_finished_transfers_do_not_keep_their_bodies_until_their_deadlines(serve, engine):
    """Ended transfers stay in the deadline heap until their (long) deadlines pass; their bodies must not."""
    body = b"b" * 50_000
    server = serve(answer_forever(response("200 OK", body)))
    fetcher = EngineFetcher(FetchPolicy(connect_timeout=30, header_timeout=30, body_timeout=60), engine=engine)
    assert fetcher.fetch(server.url("/warm")).body == body
    tracemalloc.start()
    try:
        for i in range(200):  # 10 MB of bodies in all
            assert len(fetcher.fetch(server.url(f"/{i}")).body) == len(body)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2_000_000, f"{held} bytes still held after 200 fetches"


def test_a_response_refused_for_a_nul_in_a_header_is_recognised(serve, engine):
    """The load agent asks such a page again with the Fetcher (the hostile-input suite keeps it); that needs
    libcurl's refusal to be told apart from other malformed responses, whatever libcurl's wording of the day."""
    nul = serve(answer_forever(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: "a\x00b"\r\n\r\nok'))
    garbage = serve(answer_forever(b"SSH-2.0-OpenSSH_9.0\r\n\r\n"))
    fetcher = EngineFetcher(FAST, engine=engine)
    assert refused_nul_header(fetcher.fetch(nul.url()))
    refused = fetcher.fetch(garbage.url())
    assert refused.failure is FailureKind.BAD_RESPONSE and not refused_nul_header(refused)
