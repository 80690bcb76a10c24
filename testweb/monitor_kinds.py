"""Servers for the TCP and DNS monitors' tests, loopback only, stopped by their context manager: a TCP
listener that greets each connection with a banner (or says nothing), a closed port, and a DNS server
that answers from a table (dnspython builds the answers), or stays silent.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset


@dataclass
class TcpListener:
    host: str
    port: int
    accepted: int = 0

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"


@contextmanager
def tcp_listener(banner: bytes = b"", host: str = "127.0.0.1") -> Iterator[TcpListener]:
    """Accepts connections; sends `banner` to each and closes it after a second or when the peer does."""
    sock = socket.create_server((host, 0))
    sock.settimeout(0.2)
    info = TcpListener(host, sock.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            info.accepted += 1
            with conn:
                try:
                    if banner:
                        conn.sendall(banner)
                    conn.settimeout(1.0)
                    conn.recv(1)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield info
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


def closed_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class DnsServer:
    host: str
    port: int
    records: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    silent: bool = False
    queries: int = 0

    @property
    def nameserver(self) -> str:
        return f"{self.host}:{self.port}"


@contextmanager
def dns_server(records: dict[tuple[str, str], list[str]], host: str = "127.0.0.1") -> Iterator[DnsServer]:
    """A UDP nameserver: (name, type) -> record texts; a known name without that type is NOERROR with no
    answer, an unknown name NXDOMAIN; `silent` set, it answers nothing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    sock.settimeout(0.2)
    info = DnsServer(host, sock.getsockname()[1], {(n.rstrip(".").lower(), t): v for (n, t), v in records.items()})
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            info.queries += 1
            if info.silent:
                continue
            query = dns.message.from_wire(data)
            reply = dns.message.make_response(query)
            q = query.question[0]
            name = q.name.to_text().rstrip(".").lower()
            rtype = dns.rdatatype.to_text(q.rdtype)
            values = info.records.get((name, rtype))
            if values:
                reply.answer.append(dns.rrset.from_text_list(q.name, 60, "IN", rtype, values))
            elif not any(n == name for n, _ in info.records):
                reply.set_rcode(dns.rcode.NXDOMAIN)
            sock.sendto(reply.to_wire(), peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield info
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


@dataclass
class JsonHealth:
    host: str
    port: int
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/health"


@contextmanager
def json_health(body: bytes, headers: dict[str, str] | None = None, host: str = "127.0.0.1") -> Iterator[JsonHealth]:
    """An HTTP health endpoint answering 200 with `body` (change `.body` to change the answer) and headers."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    info = JsonHealth(host, 0, body, dict(headers or {}))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            for name, value in info.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(info.body)))
            self.end_headers()
            self.wfile.write(info.body)

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    info.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield info
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
