"""One libcurl transfer of the fetch engine: the request it makes, how its easy handle is set up, and the
callbacks libcurl calls inside ``socket_action`` while it runs.

The callbacks are where the Fetcher's guarantees hold on this stack (``crawler.engine`` lists them): the
guard on every address about to be dialled (OPENSOCKETFUNCTION) and on the peer a request is about to go out
on (PREREQFUNCTION), the header and body deadlines armed on the loop as each phase starts, and the header
and body limits, each refusal recorded as the failure the transfer ends with (``flag``). The options keep
libcurl to what was checked: no proxy from the environment, only HTTP(S), no redirect followed, and with
``Request.addresses`` only those addresses dialled (CURLOPT_RESOLVE).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

import pycurl

from .http import (
    DEFAULT_PORTS,
    AddressCheck,
    FailureKind,
    FetchPolicy,
    FetchResult,
    body_too_large,
    ca_bundle,
    declared_too_large,
)
from .sanitize import clean_headers, header_int


class Deadlines(Protocol):
    """What a transfer asks of the loop that drives it (crawler.curl_loop.Loop): a deadline armed."""

    def arm(self, t: _Transfer, deadline: float) -> None: ...


__all__ = ["Done", "Request"]

Done = Callable[[FetchResult, float], None]  # (result, wall-clock start) of one transfer

_BACKSTOP_S = 1.0  # libcurl's total timeout is the sum of the phase budgets plus this
_ACCEPT_ENCODING = "gzip, deflate"
# At most this many header lines in a response, as http.client (the Fetcher) allows: a flood of small headers
# is a malformed response whatever its total size.
_MAX_HEADER_LINES = 100


@dataclass(frozen=True)
class Request:
    url: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()  # sent after ours (conditional GET: If-None-Match …)
    address_check: AddressCheck | None = None  # None: any address may be dialled
    keep_body: bool = True
    # With keep_body False: keep at most this many first bytes of the body anyway (the monitor keeps the start
    # of every answer, so a failing one can be shown as evidence without holding whole pages in memory).
    keep_first_bytes: int = 0
    # False: the monitor's check — a fresh connection, closed after, no DNS cache, so each check measures
    # DNS, connect, first byte and body as a check minutes later would. True: keep-alive between requests.
    reuse: bool = True
    addresses: tuple[str, ...] = ()  # resolved and checked by the caller: libcurl dials only these
    certificate: bool = False  # https: keep the server's certificate from the handshake
    ca_bundle: str | None = None  # None: certifi's, as requests uses


@dataclass(eq=False)
class _Transfer:
    """One request in flight: what the callbacks saw, and its current deadline."""

    request: Request
    policy: FetchPolicy
    loop: Deadlines
    easy: pycurl.Curl
    done: Done
    started: float = 0.0  # monotonic
    started_wall: float = 0.0
    connected_at: float | None = None
    status: int | None = None
    head: list[tuple[str, str]] = field(default_factory=list)  # the current response's header lines
    status_line: str = ""
    headers: dict[str, str] | None = None  # the final response's, cleaned, once its head has ended
    header_bytes: int = 0
    headers_done_at: float | None = None
    body: bytearray | None = None
    received: int = 0
    deadline: float | None = None  # the header or body deadline currently armed (monotonic)
    flag: tuple[FailureKind, str] | None = None  # set by a callback that aborted the transfer
    forbidden: str | None = None  # why address_check refused the (last) address

    # -- libcurl callbacks (C calls them inside socket_action) -------------------------------------

    def on_prereq(self, primary_ip: str, local_ip: str, primary_port: int, local_port: int) -> int:
        # Connected (or a kept-alive connection picked); the request is about to go. The guard sees the peer
        # the request will really reach, whoever opened the connection and for whom.
        check = self.request.address_check
        if check is not None:
            reason = check(primary_ip)
            if reason is not None:
                self.forbidden = f"{primary_ip}: {reason}"
                self.flag = (FailureKind.FORBIDDEN_ADDRESS, self.forbidden[:200])
                return pycurl.PREREQFUNC_ABORT
        self.connected_at = now = time.monotonic()
        self.loop.arm(self, now + self.policy.header_timeout)
        return pycurl.PREREQFUNC_OK

    def on_header(self, line: bytes) -> int | None:
        self.header_bytes += len(line)
        if self.header_bytes > self.policy.max_header_bytes:
            limit = self.policy.max_header_bytes
            self.flag = (FailureKind.BAD_RESPONSE, f"response headers total more than {limit} bytes")
            return -1  # not len(line): libcurl aborts with WRITE_ERROR
        if line.startswith(b"HTTP/"):  # a status line: a new response (after a 1xx) starts afresh
            parts = line.split(None, 2)
            # Three digits or no status (RFC 9110 §15): a longer number would overflow the stored column.
            code = parts[1] if len(parts) > 1 else b""
            self.status = int(code) if len(code) == 3 and code.isdigit() else None
            self.status_line = line.decode("latin-1").rstrip("\r\n")
            self.head = []
            self.headers = None
        elif line in (b"\r\n", b"\n"):
            if self.status is not None and self.status >= 200:  # an interim 1xx is not the answer
                self.headers_done_at = now = time.monotonic()
                self.headers = clean_headers(self.head)
                if self.request.method != "HEAD":
                    # A body declared larger than the limit is not read at all. Checked here rather than by
                    # libcurl's MAXFILESIZE, which also refuses a Content-Length no body can have (beyond a
                    # bigint): that one says nothing, and the body is read to the limit as usual.
                    declared = header_int(self.headers.get("content-length"))
                    limit = self.policy.max_body_bytes
                    if declared is not None and declared > limit:
                        self.flag = declared_too_large(declared, limit)
                        return -1
                self.loop.arm(self, now + self.policy.body_timeout)
        else:
            if len(self.head) >= _MAX_HEADER_LINES:
                self.flag = (FailureKind.BAD_RESPONSE, f"more than {_MAX_HEADER_LINES} response headers")
                return -1
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                self.head.append((name, value.strip()))
        return None

    def on_body(self, chunk: bytes) -> int | None:
        limit = self.policy.max_body_bytes
        room = limit - self.received
        if len(chunk) > room:
            if self.body is not None:
                self._keep(chunk[:room])
            self.received = limit
            self.flag = body_too_large(limit)
            return 0  # libcurl aborts with WRITE_ERROR
        self.received += len(chunk)
        if self.body is not None:
            self._keep(chunk)
        return None

    def _keep(self, chunk: bytes) -> None:
        assert self.body is not None
        if self.request.keep_body:
            self.body += chunk
        elif len(self.body) < self.request.keep_first_bytes:
            self.body += chunk[: self.request.keep_first_bytes - len(self.body)]

    def on_opensocket(self, purpose: int, address: tuple) -> socket.socket | int:
        family, socktype, protocol, addr = address
        check = self.request.address_check
        if check is not None and family in (socket.AF_INET, socket.AF_INET6):
            reason = check(str(addr[0]))
            if reason is not None:
                self.forbidden = f"{addr[0]}: {reason}"
                return pycurl.SOCKET_BAD  # libcurl tries the next address, or fails with COULDNT_CONNECT
        return socket.socket(family, socktype, protocol)


def _configure(easy: pycurl.Curl, t: _Transfer) -> None:
    request, policy = t.request, t.policy
    easy.setopt(pycurl.URL, request.url)
    easy.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    easy.setopt(pycurl.NOSIGNAL, 1)
    easy.setopt(pycurl.NOPROXY, "*")  # never a proxy from the environment: we dial checked IPs only
    easy.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
    easy.setopt(pycurl.USERAGENT, policy.user_agent)
    headers = [f"{name}: {value}" for name, value in request.headers]
    if not request.reuse:
        easy.setopt(pycurl.FRESH_CONNECT, 1)
        easy.setopt(pycurl.FORBID_REUSE, 1)
        easy.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)
        headers.insert(0, "Connection: close")
    if headers:
        easy.setopt(pycurl.HTTPHEADER, headers)
    host, port = _host_port(request.url)
    if request.addresses and not _is_ip(host):
        easy.setopt(pycurl.RESOLVE, [f"{host}:{port}:{','.join(_bracket(ip) for ip in request.addresses)}"])
    easy.setopt(pycurl.ACCEPT_ENCODING, _ACCEPT_ENCODING)
    easy.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(policy.connect_timeout * 1000)))
    backstop = policy.connect_timeout + policy.header_timeout + policy.body_timeout + _BACKSTOP_S
    easy.setopt(pycurl.TIMEOUT_MS, int(backstop * 1000))
    if request.method == "HEAD":
        easy.setopt(pycurl.NOBODY, 1)
    else:
        if request.method != "GET":
            easy.setopt(pycurl.CUSTOMREQUEST, request.method)
    easy.setopt(pycurl.CAINFO, request.ca_bundle or ca_bundle())
    if request.certificate and request.url[:8].lower() == "https://":
        easy.setopt(pycurl.OPT_CERTINFO, 1)  # the certificate from the handshake, even a rejected one
    easy.setopt(pycurl.PREREQFUNCTION, t.on_prereq)
    easy.setopt(pycurl.HEADERFUNCTION, t.on_header)
    easy.setopt(pycurl.WRITEFUNCTION, t.on_body)
    if request.address_check is not None:
        easy.setopt(pycurl.OPENSOCKETFUNCTION, t.on_opensocket)


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return (parts.hostname or "").strip("[]"), parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 80)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _bracket(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def _info(easy: pycurl.Curl, info: int):
    try:
        return easy.getinfo(info)
    except pycurl.error:
        return None
