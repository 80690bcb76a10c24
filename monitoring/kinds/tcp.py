"""A TCP check: look the host up, connect, optionally complete a TLS handshake and read an expected
banner, each phase on its own deadline (the crawler's FetchPolicy: dns_timeout, connect_timeout for TCP
and TLS together, header_timeout for the banner). Every address goes through the private-address guard
before it is dialled, as the HTTP client's do.

Categories: connected (and the handshake and banner as asked) -> normal, or delay past the threshold;
no connection (lookup failed, refused, timed out, forbidden address, no banner before its deadline) ->
disconnect; a server that answered wrongly (certificate refused, a different banner) -> error.

No Django or Celery import.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass

from crawler.http import AddressCheck, FailureKind, FetchPolicy, Timings
from crawler.resolve import Unresolved, resolve_allowed
from crawler.sanitize import clean_line
from crawler.status import Category

from . import KindResult, result_of, timed_category

BANNER_MAX_BYTES = 4096  # read at most this much while waiting for the expected banner
MAX_BANNER_LENGTH = 200


class TcpTargetError(ValueError):
    pass


@dataclass(frozen=True)
class TcpSpec:
    host: str
    port: int
    tls: bool = False
    banner: str = ""  # the first bytes the server sends must contain this; empty: nothing is read

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"


def tcp_target_parse(text: str) -> tuple[str, int]:
    """``"host:port"`` (``"[v6]:port"``) -> (host, port); a clear message for anything else."""
    text = text.strip()
    host, sep, port = text.rpartition(":")
    host = host.strip("[]").lower()
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise TcpTargetError(f"{text!r} is not host:port (a port 1-65535)")
    if any(c.isspace() or ord(c) < 32 or c in "/?#@" for c in host):
        raise TcpTargetError(f"{host!r} is not a host name or an IP address")
    return host, int(port)


def tcp_check(spec: TcpSpec, *, policy: FetchPolicy, guard: AddressCheck | None, threshold_s: float) -> KindResult:
    """One check; never raises for a network reason."""
    started_wall, t0 = time.time(), time.monotonic()
    ms = lambda: (time.monotonic() - t0) * 1000  # noqa: E731
    dns_ms = connect_ms = first_ms = None
    peer = None
    said: list[str] = []  # what a passed check saw: connect and TLS times, the banner (its detail)

    def done(category: Category, failure: str = "", detail: str = "", kind: FailureKind | None = None, n: int = 0):
        timings = Timings(dns_ms, connect_ms, first_ms, None, ms())
        result = result_of(spec.target, "TCP", timings=timings, detail=detail, failure=kind, received=n, peer_ip=peer)
        return KindResult(started_wall, result, category, failure, detail[:300])

    try:
        allowed = resolve_allowed(spec.host, spec.port, guard=guard, deadline=policy.dns_timeout)
    except Unresolved as exc:
        dns_ms = ms()
        return done(Category.DISCONNECT, exc.kind.value, exc.detail, exc.kind)
    dns_ms = ms()
    connect_start = time.monotonic()
    deadline = connect_start + policy.connect_timeout
    sock, last_error = None, "no address"
    for ip in allowed:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            sock = socket.create_connection((ip, spec.port), timeout=left)
            peer = ip
            said.append(f"connected to {ip} in {(time.monotonic() - connect_start) * 1000:.0f} ms")
            break
        except TimeoutError:
            last_error = f"connect to {ip} timed out"
        except OSError as exc:
            last_error = f"connect to {ip}: {exc.strerror or exc}"
    if sock is None:
        connect_ms = (time.monotonic() - connect_start) * 1000
        timed_out = "timed out" in last_error or time.monotonic() >= deadline
        kind = FailureKind.CONNECT_TIMEOUT if timed_out else FailureKind.REFUSED
        return done(Category.DISCONNECT, kind.value, last_error, kind)
    try:
        if spec.tls:
            left = max(0.001, deadline - time.monotonic())
            sock.settimeout(left)
            tls_start = time.monotonic()
            try:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=spec.host)
                said.append(f"TLS handshake {(time.monotonic() - tls_start) * 1000:.0f} ms")
            except ssl.SSLCertVerificationError as exc:
                connect_ms = (time.monotonic() - connect_start) * 1000
                return done(
                    Category.ERROR, FailureKind.TLS.value, f"certificate refused: {exc.verify_message}", FailureKind.TLS
                )
            except (ssl.SSLError, OSError) as exc:
                connect_ms = (time.monotonic() - connect_start) * 1000
                timed_out = isinstance(exc, TimeoutError)
                kind = FailureKind.CONNECT_TIMEOUT if timed_out else FailureKind.TLS
                category = Category.DISCONNECT if timed_out else Category.ERROR
                return done(category, kind.value, f"TLS handshake failed: {exc}", kind)
        connect_ms = (time.monotonic() - connect_start) * 1000
        if not spec.banner:
            return done(timed_category(ms(), threshold_s), detail="; ".join(said))
        return _banner(spec, sock, policy, done, threshold_s, said)
    finally:
        sock.close()


def _banner(
    spec: TcpSpec, sock: socket.socket, policy: FetchPolicy, done, threshold_s: float, said: list[str]
) -> KindResult:
    """Read until the expected banner shows, BANNER_MAX_BYTES came, the peer closed or header_timeout."""
    want = spec.banner.encode("utf-8", "replace")
    deadline = time.monotonic() + policy.header_timeout
    got = b""
    while want not in got and len(got) < BANNER_MAX_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(BANNER_MAX_BYTES - len(got))
        except TimeoutError:
            break
        except OSError as exc:
            return done(
                Category.DISCONNECT, FailureKind.RESET.value, f"reading the banner: {exc}", FailureKind.RESET, len(got)
            )
        if not chunk:
            break
        got += chunk
    seen = clean_line(got[:120].decode("utf-8", "replace"), 120)
    if want in got:
        passed = done(Category.NORMAL, detail="; ".join([*said, f"banner {seen!r}"]), n=len(got))
        category = timed_category(passed.result.timings.total_ms, threshold_s)
        return KindResult(passed.started_at, passed.result, category, detail=passed.detail)
    if not got:
        detail = f"no banner within {policy.header_timeout:g}s"
        return done(Category.DISCONNECT, FailureKind.HEADER_TIMEOUT.value, detail, FailureKind.HEADER_TIMEOUT)
    detail = f"banner {spec.banner!r} expected, got {seen!r}"
    return done(Category.ERROR, "banner", detail, None, len(got))
