"""Tests for the crawler's fetchers against tiny raw-socket servers on 127.0.0.1 (no network, no Django).

Every test runs twice: on crawler.fetch's thread-per-exchange Fetcher and on crawler.engine's EngineFetcher
(one libcurl multi loop on its own thread), which keep the same contract."""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import pytest

from crawler.engine import Engine, EngineFetcher
from crawler.fetch import Fetcher
from crawler.http import FailureKind, FetchPolicy

Handler = Callable[[socket.socket, "TinyServer"], None]

FAST = FetchPolicy(connect_timeout=1.0, header_timeout=0.5, body_timeout=0.8, max_body_bytes=1024 * 1024)


class TinyServer:
    """A threaded TCP listener; ``handler(conn, server)`` runs once per accepted connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.accepts = 0
        self.requests: list[bytes] = []
        self.stopping = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
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
                self.accepts += 1
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.handler(conn, self)
        except OSError:
            pass  # the client went away (expected in reset / too-large tests) or stop() closed it
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes | None:
        """Read one request head; None when the client closed the connection."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
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
def serve() -> Iterator[Callable[[Handler], TinyServer]]:
    servers: list[TinyServer] = []

    def start(handler: Handler) -> TinyServer:
        server = TinyServer(handler)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(params=["fetcher", "engine"])
def make(request):
    """Builds the fetcher under test: the Fetcher, or an EngineFetcher on an engine of the test's own."""
    if request.param == "fetcher":
        yield Fetcher
        return
    engine = Engine(max_parallel=16)

    def build(policy: FetchPolicy, **kwargs) -> EngineFetcher:
        return EngineFetcher(policy, engine=engine, **kwargs)

    yield build
    engine.close()


@pytest.fixture
def fetcher(make) -> Iterator[Fetcher]:
    with make(FAST) as f:
        yield f


def response(status: str, body: bytes = b"", headers: dict[str, str] | None = None, *, length: bool = True) -> bytes:
    lines = [f"HTTP/1.1 {status}"]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def answer_forever(payload: bytes) -> Handler:
    """Keep-alive server: answers every request on the connection with ``payload``."""

    def handler(conn: socket.socket, server: TinyServer) -> None:
        while server.read_request(conn) is not None:
            conn.sendall(payload)

    return handler


def hang(conn: socket.socket, server: TinyServer) -> None:
    server.read_request(conn)
    server.stopping.wait(10)


# --- plain responses ---------------------------------------------------------------------------------


def test_200_with_body_and_headers(serve, fetcher) -> None:
    headers = {
        "Content-Type": "text/html; charset=utf-8",
        "ETag": '"abc"',
        "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT",
        "Retry-After": "120",
    }
    server = serve(answer_forever(response("200 OK", b"<html>hello</html>", headers)))

    result = fetcher.fetch(server.url("/page?q=1"))

    assert result.failure is None and result.responded and result.status == 200
    assert result.body == b"<html>hello</html>" and result.bytes_received == 18 and not result.truncated
    assert result.headers["content-type"] == "text/html; charset=utf-8"
    assert result.headers["etag"] == '"abc"'
    assert result.headers["last-modified"] == "Wed, 21 Oct 2015 07:28:00 GMT"
    assert result.headers["retry-after"] == "120"
    assert result.headers["content-length"] == "18"
    assert result.peer_ip == "127.0.0.1"
    t = result.timings
    assert t.dns_ms is not None and t.connect_ms is not None and t.first_byte_ms is not None
    assert t.body_ms is not None and t.total_ms >= t.connect_ms
    request = server.requests[0].decode().lower()
    assert request.startswith("get /page?q=1 http/1.1")
    assert "user-agent: crawladmin/0.1" in request
    assert "accept-encoding: gzip, deflate" in request


def test_404_is_a_response_not_a_failure(serve, fetcher) -> None:
    server = serve(answer_forever(response("404 Not Found", b"nope")))
    result = fetcher.fetch(server.url())
    assert result.status == 404 and result.failure is None and result.body == b"nope" and result.responded


def test_redirect_is_returned_not_followed(serve, fetcher) -> None:
    server = serve(answer_forever(response("301 Moved Permanently", b"", {"Location": "/elsewhere"})))
    result = fetcher.fetch(server.url("/old"))
    assert result.status == 301 and result.failure is None
    assert result.headers["location"] == "/elsewhere"
    assert len(server.requests) == 1


def test_head_has_no_body(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        while server.read_request(conn) is not None:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nContent-Type: text/plain\r\n\r\n")

    server = serve(handler)
    result = fetcher.fetch(server.url(), method="HEAD")
    assert result.status == 200 and result.failure is None and result.body == b""
    assert result.headers["content-length"] == "5000"  # not refused as too large: HEAD has no body
    assert server.requests[0].startswith(b"HEAD / ")


def test_gzip_body_is_decompressed(serve, fetcher) -> None:
    compressor = zlib.compressobj(wbits=31)  # gzip container
    payload = compressor.compress(b"hello " * 1000) + compressor.flush()
    server = serve(answer_forever(response("200 OK", payload, {"Content-Encoding": "gzip"})))
    result = fetcher.fetch(server.url())
    assert result.failure is None and result.body == b"hello " * 1000


def test_caller_headers_are_sent(serve, fetcher) -> None:
    server = serve(answer_forever(response("304 Not Modified", length=False)))
    result = fetcher.fetch(server.url(), headers={"If-None-Match": '"v1"'})
    assert result.status == 304 and result.failure is None
    assert b'If-None-Match: "v1"' in server.requests[0]


# --- connection failures -----------------------------------------------------------------------------


def test_refused_port(fetcher) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    result = fetcher.fetch(f"http://127.0.0.1:{port}/")
    assert result.failure is FailureKind.REFUSED and not result.responded and result.status is None
    assert result.detail == "connection refused"


def test_dns_failure(fetcher) -> None:
    result = fetcher.fetch("http://nonexistent.invalid/")
    assert result.failure is FailureKind.DNS and result.timings.dns_ms is not None and result.peer_ip is None


def test_unsupported_url_is_classified_not_raised(fetcher) -> None:
    assert fetcher.fetch("ftp://example.org/").failure is FailureKind.OTHER
    assert fetcher.fetch("http://127.0.0.1:notaport/").failure is FailureKind.OTHER


def test_address_check_blocks_before_connecting(serve, make) -> None:
    server = serve(answer_forever(response("200 OK", b"secret")))
    checked: list[str] = []

    def guard(ip: str) -> str | None:
        checked.append(ip)
        return "loopback address" if ip.startswith("127.") else None

    with make(FAST, address_check=guard) as fetcher:
        result = fetcher.fetch(server.url())
    time.sleep(0.1)  # give a (wrong) connection time to show up in the accept loop
    assert result.failure is FailureKind.FORBIDDEN_ADDRESS and "not an address the crawl may reach" in result.detail
    assert "loopback" not in result.detail  # the kind of address is not told (the URL names this host)
    assert checked == ["127.0.0.1"]
    assert server.accepts == 0 and result.body == b""


def test_address_check_allowing_lets_fetch_through(serve, make) -> None:
    server = serve(answer_forever(response("200 OK", b"fine")))
    with make(FAST, address_check=lambda ip: None) as fetcher:
        assert fetcher.fetch(server.url()).body == b"fine"


# --- timeouts ----------------------------------------------------------------------------------------


def test_silent_server_is_header_timeout(serve, fetcher) -> None:
    server = serve(hang)
    started = time.monotonic()
    result = fetcher.fetch(server.url())
    elapsed = time.monotonic() - started
    assert result.failure is FailureKind.HEADER_TIMEOUT and not result.responded
    assert FAST.header_timeout - 0.05 <= elapsed < FAST.header_timeout + 1.5


def test_trickled_headers_are_bounded_by_header_timeout(serve, fetcher) -> None:
    """A per-read timeout would never fire here: a byte arrives every 50 ms."""

    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while not server.stopping.is_set():
            conn.sendall(b"X")
            time.sleep(0.05)

    server = serve(handler)
    started = time.monotonic()
    result = fetcher.fetch(server.url())
    elapsed = time.monotonic() - started
    assert result.failure is FailureKind.HEADER_TIMEOUT
    assert elapsed < FAST.header_timeout + 1.5


def test_trickled_body_is_body_timeout_and_keeps_partial_body(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        while not server.stopping.is_set():
            conn.sendall(b"x")
            time.sleep(0.1)

    server = serve(handler)
    started = time.monotonic()
    result = fetcher.fetch(server.url())
    elapsed = time.monotonic() - started
    assert result.failure is FailureKind.BODY_TIMEOUT and result.status == 200
    assert elapsed < FAST.body_timeout + 1.5
    assert elapsed >= FAST.body_timeout - 0.05
    assert 3 <= len(result.body) == result.bytes_received and set(result.body) == {ord("x")}
    assert result.timings.body_ms is not None and result.timings.body_ms >= FAST.body_timeout * 1000 - 50


def test_trickled_chunked_body_is_body_timeout(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while not server.stopping.is_set():
            conn.sendall(b"1\r\ny\r\n")
            time.sleep(0.1)

    server = serve(handler)
    started = time.monotonic()
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.BODY_TIMEOUT
    assert time.monotonic() - started < FAST.body_timeout + 1.0
    assert result.body.startswith(b"yy")


def test_body_delimited_by_connection_close(serve, fetcher) -> None:
    """No Content-Length: the body ends at EOF, after http.client has already closed its connection."""

    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        for _ in range(5):
            conn.sendall(b"c" * 1000)
            time.sleep(0.02)

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is None and result.body == b"c" * 5000
    again = fetcher.fetch(server.url())  # the pool must reconnect, not reuse the closed socket
    assert again.failure is None and again.body == b"c" * 5000 and server.accepts == 2


# --- size limits -------------------------------------------------------------------------------------


def _gzip_of_zeros(total: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(total // len(block))]
    return b"".join(parts) + compressor.flush()


def test_gzip_bomb_is_cut_incrementally(serve, fetcher) -> None:
    bomb = _gzip_of_zeros(50 * 1024 * 1024)  # ~50 KB on the wire, 50 MB inflated
    server = serve(answer_forever(response("200 OK", bomb, {"Content-Encoding": "gzip"})))
    tracemalloc.start()
    try:
        started = time.monotonic()
        result = fetcher.fetch(server.url())
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.failure is FailureKind.TOO_LARGE and result.truncated and result.status == 200
    assert len(result.body) == FAST.max_body_bytes == result.bytes_received
    assert result.body == bytes(FAST.max_body_bytes)
    assert elapsed < 2.0
    assert peak < 8 * FAST.max_body_bytes, f"peak allocation {peak} bytes: bomb was not inflated incrementally"


def test_declared_oversized_body_is_refused_early(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {FAST.max_body_bytes * 3}\r\n\r\n".encode())
        for _ in range(3 * 16):
            conn.sendall(b"a" * (FAST.max_body_bytes // 16))

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.TOO_LARGE and result.truncated and result.status == 200
    assert result.body == b"" and "content-length" in result.detail


def test_undeclared_oversized_body_is_cut_at_limit(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        block = b"b" * 100_000
        for _ in range(40):  # 4 MB > 1 MiB limit
            conn.sendall(b"%x\r\n%s\r\n" % (len(block), block))
        conn.sendall(b"0\r\n\r\n")

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.TOO_LARGE and result.truncated
    assert len(result.body) == FAST.max_body_bytes == result.bytes_received
    assert set(result.body) == {ord("b")}


def test_body_exactly_at_limit_is_complete(serve, make) -> None:
    policy = FetchPolicy(connect_timeout=1, header_timeout=0.5, body_timeout=1, max_body_bytes=1000)
    server = serve(answer_forever(response("200 OK", b"z" * 1000)))
    with make(policy) as fetcher:
        result = fetcher.fetch(server.url())
    assert result.failure is None and not result.truncated and len(result.body) == 1000


# --- protocol errors ---------------------------------------------------------------------------------


def test_header_flood_many_headers(serve, fetcher) -> None:
    flood = "".join(f"X-Flood-{i}: {'v' * 85}\r\n" for i in range(2000))  # 2000 headers of ~100 bytes

    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(("HTTP/1.1 200 OK\r\n" + flood + "Content-Length: 0\r\n\r\n").encode())

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.BAD_RESPONSE and result.status is None and result.detail


def test_header_flood_few_huge_headers(serve, fetcher) -> None:
    """Under http.client's 100-header cap but over max_header_bytes (50 x 2000 bytes = 100 KB)."""
    flood = "".join(f"X-Big-{i}: {'v' * 2000}\r\n" for i in range(50))

    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(("HTTP/1.1 200 OK\r\n" + flood + "Content-Length: 0\r\n\r\n").encode())

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.BAD_RESPONSE and "response headers total" in result.detail


def test_garbage_status_line_is_bad_response(serve, fetcher) -> None:
    server = serve(answer_forever(b"SSH-2.0-OpenSSH_9.0\r\n\r\n"))
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.BAD_RESPONSE


def _reset(conn: socket.socket) -> None:
    # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def test_reset_mid_body(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"r" * 1000)
        time.sleep(0.1)
        _reset(conn)

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.RESET and result.status == 200
    assert result.bytes_received <= 1000


def test_body_shorter_than_content_length(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + b"s" * 100)
        conn.shutdown(socket.SHUT_WR)  # clean FIN, but 400 bytes short

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.RESET and "promised" in result.detail
    assert result.body == b"s" * 100


def test_close_without_response_is_reset(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)

    server = serve(handler)
    result = fetcher.fetch(server.url())
    assert result.failure is FailureKind.RESET and not result.responded


# --- connection reuse --------------------------------------------------------------------------------


def test_keep_alive_reuses_one_connection(serve, fetcher) -> None:
    server = serve(answer_forever(response("200 OK", b"again")))
    first = fetcher.fetch(server.url("/a"))
    second = fetcher.fetch(server.url("/b"))
    third = fetcher.fetch(server.url("/c"), method="HEAD")
    assert [r.status for r in (first, second, third)] == [200, 200, 200]
    assert server.accepts == 1 and len(server.requests) == 3
    assert first.timings.connect_ms is not None and second.timings.connect_ms is None
    assert second.peer_ip == "127.0.0.1"


def test_connection_after_failure_is_not_reused(serve, fetcher) -> None:
    def handler(conn: socket.socket, server: TinyServer) -> None:
        while (request := server.read_request(conn)) is not None:
            if b"/big" in request:
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                block = b"q" * 200_000
                for _ in range(10):
                    conn.sendall(b"%x\r\n%s\r\n" % (len(block), block))
                conn.sendall(b"0\r\n\r\n")
            else:
                conn.sendall(response("200 OK", b"small"))

    server = serve(handler)
    assert fetcher.fetch(server.url("/big")).failure is FailureKind.TOO_LARGE
    result = fetcher.fetch(server.url("/small"))
    assert result.failure is None and result.body == b"small"
    assert server.accepts == 2


def test_stale_keep_alive_connection_is_retried_once(serve, fetcher) -> None:
    """The server answers one request per connection, then drops the next without a word."""

    def handler(conn: socket.socket, server: TinyServer) -> None:
        server.read_request(conn)
        conn.sendall(response("200 OK", b"once"))
        server.read_request(conn)  # read the reused-connection request, then hang up

    server = serve(handler)
    assert fetcher.fetch(server.url("/1")).body == b"once"
    result = fetcher.fetch(server.url("/2"))
    assert result.failure is None and result.body == b"once"
    assert server.accepts == 2


def test_separate_origins_get_separate_sessions(serve, fetcher) -> None:
    one = serve(answer_forever(response("200 OK", b"one")))
    two = serve(answer_forever(response("200 OK", b"two")))
    assert fetcher.fetch(one.url()).body == b"one"
    assert fetcher.fetch(two.url()).body == b"two"
    assert fetcher.fetch(one.url()).body == b"one"
    assert one.accepts == 1 and two.accepts == 1


def test_failure_kind_values_are_short_snake_case() -> None:
    for kind in FailureKind:
        assert kind.value == kind.name.lower() and len(kind.value) <= 20


# --- TLS ---------------------------------------------------------------------------------------------


def test_stalled_tls_handshake_is_connect_timeout(serve, make) -> None:
    """TCP connects but the server never answers the ClientHello: still the connect (+TLS) phase."""
    server = serve(hang)
    policy = FetchPolicy(connect_timeout=0.5, header_timeout=5, body_timeout=5)
    started = time.monotonic()
    with make(policy) as fetcher:
        result = fetcher.fetch(server.url().replace("http:", "https:"))
    assert result.failure is FailureKind.CONNECT_TIMEOUT
    assert time.monotonic() - started < policy.connect_timeout + 0.5


@pytest.fixture
def self_signed(tmp_path) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not available to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )
    return str(cert), str(key)


def test_untrusted_certificate_is_tls_failure(serve, fetcher, self_signed) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed)

    def handler(conn: socket.socket, server: TinyServer) -> None:
        with context.wrap_socket(conn, server_side=True) as tls:  # the client aborts the handshake
            answer_forever(response("200 OK", b"tls"))(tls, server)

    server = serve(handler)
    result = fetcher.fetch(server.url().replace("http:", "https:"))
    assert result.failure is FailureKind.TLS and "TLS error" in result.detail and not result.responded


# --- poison in headers, a resolver that never answers ---------------------------------


def test_nul_bytes_and_a_huge_content_length_arrive_as_storable_values(serve, fetcher) -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Evil: a\x00b\x01c\r\n"
        b"ETag: \"e\x00t\"\r\nLast-Modified: Wed\x00, 21 Oct 2015\r\n\r\nhello"
    )
    server = serve(answer_forever(raw))
    result = fetcher.fetch(server.url("/"))
    if isinstance(fetcher, EngineFetcher):
        # libcurl refuses a header with a NUL in it (RFC 9110 §5.5 lets a recipient reject it): a malformed
        # response, nothing of it kept. The other control characters are cleaned as the Fetcher cleans them.
        assert result.failure is FailureKind.BAD_RESPONSE and result.status is None and result.headers == {}
        assert "\x00" not in result.detail + result.response_head and result.body == b""
        raw = raw.replace(b"\x00", b"\x1b")
        server = serve(answer_forever(raw))
        result = fetcher.fetch(server.url("/"))
        assert "\x1b" not in result.response_head and "X-Evil: abc" in result.response_head
    assert result.status == 200 and result.body == b"hello"
    assert result.headers["x-evil"] == "abc" and result.headers["etag"] == '"et"'
    assert all("\x00" not in k + v for k, v in result.headers.items())


def test_a_content_length_beyond_a_bigint_is_ignored_not_trusted(serve, fetcher) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\nConnection: close\r\n\r\nhello"
    server = serve(answer_forever(raw))
    result = fetcher.fetch(server.url("/"))
    # Not "too large": a number no body can have says nothing; the body is read to the limit as usual.
    assert result.failure != FailureKind.TOO_LARGE


def test_a_name_lookup_that_never_answers_fails_as_dns_at_the_dns_deadline(monkeypatch, make) -> None:
    release = threading.Event()

    def hanging_lookup(*args, **kwargs):
        release.wait(10)  # a resolver that does not answer (the real one would wait out its retries)
        raise socket.gaierror("late")

    monkeypatch.setattr(socket, "getaddrinfo", hanging_lookup)
    policy = FetchPolicy(connect_timeout=5, header_timeout=5, body_timeout=5, dns_timeout=0.3)
    try:
        with make(policy) as f:
            started = time.monotonic()
            result = f.fetch("http://never-answers.example/")
            took = time.monotonic() - started
    finally:
        release.set()
    assert result.failure == FailureKind.DNS and "within 0.3s" in result.detail
    assert took < 2.0
