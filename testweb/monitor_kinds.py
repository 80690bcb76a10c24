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
