"""Tests for crawler.multicheck (libcurl multi) against tiny raw-socket servers on 127.0.0.1 (no Django)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from crawler.http import FailureKind, FetchPolicy
from crawler.multicheck import CheckRequest, MultiChecker

pytest.importorskip("pycurl")

FAST = FetchPolicy(connect_timeout=1.0, header_timeout=0.5, body_timeout=0.8, max_body_bytes=64 * 1024)

Handler = Callable[[socket.socket, "Tiny"], None]


class Tiny:
    """A threaded TCP listener on loopback; ``handler(conn, server)`` runs once per accepted connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[bytes] = []
        self.stopping = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._listener.settimeout(0.05)  # lets the accept loop notice stop()
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.handler(conn, self)
        except OSError:
            pass  # the client went away (timeouts, too large) or stop() closed it
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        with self._lock:
            self.requests.append(data)
        return data

    def stop(self) -> None:
        self.stopping.set()
        self._listener.close()
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(timeout=2)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Tiny]]:
    servers: list[Tiny] = []

    def start(handler: Handler) -> Tiny:
        servers.append(Tiny(handler))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def checker() -> Iterator[MultiChecker]:
    with MultiChecker(FAST) as c:
        yield c


def answer(status: str, body: bytes = b"", *, length: bool = True) -> Handler:
    head = f"HTTP/1.1 {status}\r\n" + (f"Content-Length: {len(body)}\r\n" if length else "") + "X-Test: yes\r\n\r\n"

    def handler(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(head.encode() + body)

    return handler


def one(checker: MultiChecker, url: str, **kw):
    [(started_at, result)] = checker.check_all([CheckRequest(url, **kw)])
    assert abs(started_at - time.time()) < 30
    return result


def refused_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}/"


def test_200_with_body_headers_and_every_phase_timed(serve, checker) -> None:
    server = serve(answer("200 OK", b"hello world"))
    r = one(checker, server.url("/health"))
    assert (r.status, r.failure, r.detail, r.bytes_received) == (200, None, "HTTP 200", 11)
    assert r.headers["x-test"] == "yes" and r.peer_ip == "127.0.0.1"
    t = r.timings
    assert None not in (t.dns_ms, t.connect_ms, t.first_byte_ms, t.body_ms)
    assert t.total_ms >= t.first_byte_ms >= 0
    request = server.requests[0]
    assert request.startswith(b"GET /health HTTP/1.1\r\n")
    assert b"Connection: close" in request and b"User-Agent: crawladmin" in request


def test_body_is_kept_only_when_asked(serve) -> None:
    server = serve(answer("200 OK", b"hello"))
    with MultiChecker(FAST, keep_body=True) as c:
        assert one(c, server.url()).body == b"hello"


@pytest.mark.parametrize("status", [404, 500])
def test_error_status_is_a_response_not_a_failure(serve, checker, status) -> None:
    r = one(checker, serve(answer(f"{status} Oops", b"no")).url())
    assert (r.status, r.failure) == (status, None)


def test_redirect_is_not_followed(serve, checker) -> None:
    server = serve(answer("301 Moved\r\nLocation: /elsewhere", b""))
    r = one(checker, server.url())
    assert (r.status, r.failure) == (301, None) and len(server.requests) == 1


def test_refused(checker) -> None:
    r = one(checker, refused_url())
    assert (r.status, r.failure) == (None, FailureKind.REFUSED)
    assert r.timings.connect_ms is None and r.timings.total_ms < 1000


def test_silent_server_is_header_timeout(serve, checker) -> None:
    def silent(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        server.stopping.wait(10)

    started = time.monotonic()
    r = one(checker, serve(silent).url())
    assert (r.status, r.failure) == (None, FailureKind.HEADER_TIMEOUT)
    assert 0.45 <= time.monotonic() - started < 0.5 + 1.5  # bounded; a loaded machine's scheduling aside
    assert r.timings.connect_ms is not None and r.timings.first_byte_ms is None


def test_trickled_headers_are_bounded_by_header_timeout(serve, checker) -> None:
    def trickle(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for i in range(50):
            if server.stopping.wait(0.05):
                return
            conn.sendall(f"X-{i}: y\r\n".encode())

    started = time.monotonic()
    r = one(checker, serve(trickle).url())
    # Under the 2.5 s the trickle lasts: the header deadline is the whole exchange's, not each read's.
    assert r.failure is FailureKind.HEADER_TIMEOUT and time.monotonic() - started < 0.5 + 1.5


def test_slow_body_is_body_timeout(serve, checker) -> None:
    def slow_body(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(100):  # a byte every 50 ms: each read is quick, the whole body is not
            if server.stopping.wait(0.05):
                return
            conn.sendall(b"x")

    started = time.monotonic()
    r = one(checker, serve(slow_body).url())
    assert (r.status, r.failure) == (200, FailureKind.BODY_TIMEOUT)
    assert 0.75 <= time.monotonic() - started < 0.8 + 1.5  # the body takes 5 s
    assert 0 < r.bytes_received < 1000 and r.timings.body_ms is not None


def test_declared_oversize_is_too_large_unread(serve, checker) -> None:
    def big(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + b"x" * 1000)
        server.stopping.wait(2)

    r = one(checker, serve(big).url())
    assert (r.failure, r.truncated, r.bytes_received) == (FailureKind.TOO_LARGE, True, 0)


def test_undeclared_oversize_is_cut_at_the_limit(serve, checker) -> None:
    r = one(checker, serve(answer("200 OK", b"x" * (FAST.max_body_bytes + 5000), length=False)).url())
    assert (r.failure, r.truncated, r.bytes_received) == (FailureKind.TOO_LARGE, True, FAST.max_body_bytes)


def test_body_exactly_at_the_limit_is_complete(serve, checker) -> None:
    r = one(checker, serve(answer("200 OK", b"x" * FAST.max_body_bytes)).url())
    assert (r.failure, r.bytes_received) == (None, FAST.max_body_bytes)


def test_header_flood_is_bad_response(serve, checker) -> None:
    head = "HTTP/1.1 200 OK\r\n" + "".join(f"X-{i}: {'v' * 100}\r\n" for i in range(1000)) + "\r\n"

    def flood(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(head.encode())

    assert one(checker, serve(flood).url()).failure is FailureKind.BAD_RESPONSE


def test_close_without_response_is_reset(serve, checker) -> None:
    def close(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)

    assert one(checker, serve(close).url()).failure is FailureKind.RESET


def test_garbage_is_bad_response(serve, checker) -> None:
    def garbage(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        conn.sendall(b"SPDY/9 what\r\n\r\n")

    assert one(checker, serve(garbage).url()).failure is FailureKind.BAD_RESPONSE


def test_unsupported_and_unresolvable_urls_are_classified_not_raised(checker) -> None:
    urls = ["ftp://x/", "http://\udcff/", "http://nonexistent.invalid/"]
    [ftp, bad, dns] = [t.result for t in checker.check_all([CheckRequest(u) for u in urls])]
    assert ftp.failure is FailureKind.OTHER and bad.failure is FailureKind.OTHER
    assert dns.failure is FailureKind.DNS


def test_address_check_refuses_before_connecting(serve, checker) -> None:
    server = serve(answer("200 OK", b"hi"))
    r = one(checker, server.url(), address_check=lambda ip: "loopback")
    assert r.failure is FailureKind.FORBIDDEN_ADDRESS and "loopback" in r.detail
    assert server.requests == []
    assert one(checker, server.url(), address_check=lambda ip: None).status == 200


def test_many_concurrent_checks_in_order_and_a_slow_one_holds_up_no_other(serve) -> None:
    fast = serve(answer("200 OK", b"ok"))

    def slow(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        server.stopping.wait(0.3)
        conn.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")

    urls = [fast.url(f"/{i}") for i in range(300)]
    urls[7] = serve(slow).url()
    urls[150] = refused_url()
    with MultiChecker(FAST, max_parallel=64) as c:
        started = time.monotonic()
        results = [t.result for t in c.check_all([CheckRequest(u) for u in urls])]
        elapsed = time.monotonic() - started
        again = c.check_all([CheckRequest(fast.url())])  # handles are reused
    assert [r.url for r in results] == urls
    assert results[7].status == 503 and results[150].failure is FailureKind.REFUSED
    assert all(r.status == 200 for i, r in enumerate(results) if i not in (7, 150))
    assert elapsed < 5 and again[0].result.status == 200
    assert len(fast.requests) == 299  # one connection each, none reused


def test_a_finished_checks_deadline_does_not_abort_the_next_check_on_its_handle(serve) -> None:
    fast = serve(answer("200 OK", b"ok"))

    def within_budgets(conn: socket.socket, server: Tiny) -> None:
        server.read_request(conn)
        server.stopping.wait(0.35)  # headers within the 0.5 s budget
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
        for _ in range(6):  # body within the 0.8 s budget, ending after the fast check's old deadline
            if server.stopping.wait(0.1):
                return
            conn.sendall(b"x")

    with MultiChecker(FAST, max_parallel=1) as c:  # one handle, reused by the second check
        results = [t.result for t in c.check_all([CheckRequest(fast.url()), CheckRequest(serve(within_budgets).url())])]
    assert [(r.status, r.failure, r.bytes_received) for r in results] == [(200, None, 2), (200, None, 6)]
