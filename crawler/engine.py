"""The one HTTP engine of crawler and monitor: libcurl's multi interface (pycurl), one thread, many transfers.

Why: the thread-per-exchange ``Fetcher`` (requests/urllib3) runs HTTP framing, decoding and its
deadline bookkeeping in Python, ~1 ms of CPU per page, on as many threads as there are exchanges in
flight. Here the HTTP work (connect, TLS, HTTP/1.1 framing, chunking, gzip/deflate) runs in C, and one
Python loop drives every transfer through ``socket_action`` and an epoll selector: Python sees a few
callbacks per exchange (the socket it opens, "about to send", the header lines, the body chunks).

Two ways to drive it, one transfer code:

* ``Loop`` on the caller's thread: ``crawler.multicheck``'s ``MultiChecker`` (the monitor) adds a round's
  checks and steps the loop until they have all ended;
* ``Engine``, a loop on a thread of its own, shared by every thread of a process (``shared_engine()``):
  the crawler's agents submit one request at a time from their many batch threads, and every server's
  request is in flight together in the one multi handle. ``EngineFetcher`` gives it the ``Fetcher``'s
  call (``fetch(url, method=, headers=, address_check=)``) and contract (``FetchResult``).

What every transfer keeps of the ``Fetcher``'s guarantees (see ``crawler.fetch``):

* absolute phase deadlines: connect (libcurl's CONNECTTIMEOUT: TCP + TLS, and the name lookup when
  libcurl resolves), headers (from "connected, request about to go" to the end of the response
  headers) and body (from the end of the headers, however slowly it trickles). The header and body
  deadlines are this loop's: it aborts the transfer when one passes. libcurl's total TIMEOUT is only a
  backstop;
* the private-address guard on the address actually used: ``address_check`` runs on every address
  libcurl is about to dial (OPENSOCKETFUNCTION: a forbidden one is never connected to) and again on the
  peer of the connection the request is about to go out on (PREREQFUNCTION), which covers a kept-alive
  connection opened earlier for another request. Redirects are never followed by libcurl: a caller that
  follows one makes a new request for the next hop, guarded the same way;
* ``max_body_bytes`` after decompression (a declared oversized Content-Length is refused unread),
  ``max_header_bytes`` for the response headers;
* every failure classified as a ``FailureKind``; nothing raises for network reasons;
* what a response carries is cleaned where it enters (``crawler.sanitize``).

Name resolution: with ``Request.addresses`` the caller has resolved the name itself (``EngineFetcher``:
bounded by ``dns_timeout`` and filtered by the guard, as the ``Fetcher`` does) and libcurl dials only
those (CURLOPT_RESOLVE); without, libcurl resolves (threaded resolver) within the connect budget.
"""

from __future__ import annotations

import collections
import concurrent.futures
import errno
import heapq
import ipaddress
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pycurl

from .certs import certificate_from_curl
from .fetch import resolve_checked
from .http import (
    DEFAULT_PORTS,
    FailureKind,
    FetchPolicy,
    FetchResult,
    Phase,
    Timings,
    ca_bundle,
    host_header,
    timed_out,
)
from .sanitize import clean_head, clean_headers, clean_line, header_int

__all__ = ["Engine", "EngineFetcher", "Loop", "Request", "refused_nul_header", "shared_engine"]

log = logging.getLogger(__name__)

AddressCheck = Callable[[str], "str | None"]
Done = Callable[[FetchResult, float], None]  # (result, wall-clock start) of one transfer

_BACKSTOP_S = 1.0  # libcurl's total timeout is the sum of the phase budgets plus this
_MAX_WAIT_S = 0.5  # longest selector wait when nothing is due (a submit wakes the engine at once)
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
    loop: Loop
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
                        self.flag = (FailureKind.TOO_LARGE, f"content-length {declared} > limit {limit}; body not read")
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
            self.flag = (FailureKind.TOO_LARGE, f"body exceeds {limit} bytes (after decompression)")
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


class Loop:
    """A libcurl multi handle and the Python loop that drives it: socket events through a selector,
    libcurl's timer, and the header and body deadlines. Not thread-safe: one thread calls start(),
    step(), abort() and close()."""

    def __init__(self, *, max_connections: int = 256) -> None:
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
        self.multi.setopt(pycurl.M_MAXCONNECTS, max(1, max_connections))
        self.selector = selectors.DefaultSelector()
        self.active: dict[pycurl.Curl, _Transfer] = {}
        self._heap: list[tuple[float, int, _Transfer]] = []
        self._seq = 0
        self._idle: list[pycurl.Curl] = []
        self._timer_at: float | None = None  # when libcurl wants socket_action(SOCKET_TIMEOUT)
        self._extra: dict[int, Callable[[], None]] = {}  # fds of the loop's owner (a wake-up socket)

    def close(self) -> None:
        for easy in list(self.active):
            self.abort(self.active[easy], FailureKind.OTHER, "the engine was closed")
        for easy in self._idle:
            easy.close()
        self._idle = []
        self.multi.close()
        self.selector.close()

    def watch(self, fd: int, on_readable: Callable[[], None]) -> None:
        """Also wait for `fd` to be readable (the Engine's wake-up socket)."""
        self._extra[fd] = on_readable
        self.selector.register(fd, selectors.EVENT_READ)

    # -- libcurl's socket and timer callbacks -------------------------------------------------------

    def _on_socket(self, what: int, fd: int, multi: object, socketp: object) -> None:
        if what == pycurl.POLL_REMOVE:
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass
            return
        events = 0
        if what in (pycurl.POLL_IN, pycurl.POLL_INOUT):
            events |= selectors.EVENT_READ
        if what in (pycurl.POLL_OUT, pycurl.POLL_INOUT):
            events |= selectors.EVENT_WRITE
        try:
            self.selector.modify(fd, events)
        except KeyError:
            self.selector.register(fd, events)

    def _on_timer(self, timeout_ms: int) -> None:
        self._timer_at = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000

    # -- transfers ----------------------------------------------------------------------------------

    def arm(self, t: _Transfer, deadline: float) -> None:
        t.deadline = deadline
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, t))

    def start(self, request: Request, policy: FetchPolicy, done: Done) -> _Transfer | None:
        """Set a transfer up and add it; `done(result, started_wall)` is called once when it ends. None when
        it ended at once (a URL libcurl refuses)."""
        easy = self._idle.pop() if self._idle else pycurl.Curl()
        t = _Transfer(request, policy, self, easy, done)
        t.started = time.monotonic()
        t.started_wall = time.time()
        if (request.keep_body or request.keep_first_bytes > 0) and request.method != "HEAD":
            t.body = bytearray()
        try:
            _configure(easy, t)
            self.multi.add_handle(easy)
        except (pycurl.error, UnicodeError, TypeError, ValueError) as exc:  # e.g. a non-ASCII URL
            t.flag = (FailureKind.OTHER, f"invalid URL: {type(exc).__name__}: {str(exc)[:200]}")
            self._finish(t, -1, "", added=False)
            return None
        self.active[easy] = t
        return t

    def abort(self, t: _Transfer, kind: FailureKind, detail: str) -> None:
        if self.active.get(t.easy) is t:
            t.flag = (kind, detail)
            del self.active[t.easy]
            self._finish(t, pycurl.E_ABORTED_BY_CALLBACK, "")

    def step(self, max_wait: float = _MAX_WAIT_S) -> None:
        """Wait for socket events (at most `max_wait`, less when a deadline or libcurl's timer is due),
        let libcurl act on them, collect the transfers that ended, abort those past their deadline."""
        now = time.monotonic()
        wait = max_wait
        if self._timer_at is not None:
            wait = min(wait, self._timer_at - now)
        if self._heap:
            wait = min(wait, self._heap[0][0] - now)
        multi = self.multi
        for key, mask in self.selector.select(max(0.0, wait)):
            fd = key.fd
            extra = self._extra.get(fd)
            if extra is not None:
                extra()
                continue
            action = (pycurl.CSELECT_IN if mask & selectors.EVENT_READ else 0) | (
                pycurl.CSELECT_OUT if mask & selectors.EVENT_WRITE else 0
            )
            multi.socket_action(fd, action)
        if self._timer_at is not None and self._timer_at <= time.monotonic():
            self._timer_at = None
            multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
        self._collect()
        self._expire()

    def _collect(self) -> None:
        while True:
            queued, ok, failed = self.multi.info_read()
            for easy in ok:
                self._finish(self.active.pop(easy), None, "")
            for easy, code, message in failed:
                self._finish(self.active.pop(easy), code, message)
            if not queued:
                break

    def _expire(self) -> None:
        now = time.monotonic()
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, _, t = heapq.heappop(heap)
            # Stale entries: a later phase re-armed the transfer, or it ended (and its easy handle may
            # already carry another transfer: compare the transfer, not the handle).
            if t.deadline != deadline or self.active.get(t.easy) is not t:
                continue
            self.abort(t, *timed_out(Phase.HEADERS if t.headers_done_at is None else Phase.BODY, t.policy))

    def _finish(self, t: _Transfer, code: int | None, message: str, *, added: bool = True) -> None:
        easy = t.easy
        ended = time.monotonic()
        if added:
            self.multi.remove_handle(easy)  # for a transfer still running: aborts it, drops its connection
        try:
            result = _result(t, code, message, ended)
        finally:
            easy.reset()
            self._idle.append(easy)
            # The deadline heap still holds the transfer until its deadline passes (seconds away): it must not
            # hold the body and head too, or a busy engine keeps every page of the last CRAWL_BODY_TIMEOUT.
            t.body, t.head, t.headers = None, [], None
            if len(self._heap) > 64 + 4 * len(self.active):
                self._prune()
        t.done(result, t.started_wall)

    def _prune(self) -> None:
        """Drop the heap's stale entries (transfers that ended or moved to a later deadline)."""
        active = self.active
        self._heap = [e for e in self._heap if e[2].deadline == e[0] and active.get(e[2].easy) is e[2]]
        heapq.heapify(self._heap)


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


def _result(t: _Transfer, code: int | None, message: str, ended: float) -> FetchResult:
    easy, request = t.easy, t.request
    failure, detail = _classify(easy, t, code, message) if code is not None else (None, f"HTTP {t.status}")
    answered = failure is None or t.headers_done_at is not None
    if failure is FailureKind.TOO_LARGE and t.status is not None:
        answered = True  # refused on its declared Content-Length: the status line came
    status = t.status if answered else None
    headers = (t.headers if t.headers is not None else clean_headers(t.head)) if status is not None else {}
    url = request.url
    return FetchResult(
        url=url,
        method=request.method,
        status=status,
        headers=headers,
        body=bytes(t.body) if t.body is not None else b"",
        failure=failure,
        detail=clean_line(detail, 500),
        truncated=failure is FailureKind.TOO_LARGE,
        bytes_received=t.received,
        timings=_timings(easy, t, ended, complete=code is None),
        peer_ip=(_info(easy, pycurl.PRIMARY_IP) or None) if t.connected_at is not None else None,
        certificate=certificate_from_curl(_info(easy, pycurl.INFO_CERTINFO))
        if request.certificate and url[:8].lower() == "https://"
        else None,
        request_head=_request_head(t) if t.connected_at is not None else "",
        response_head=clean_head(t.status_line, t.head) if status is not None else "",
    )


def _request_head(t: _Transfer) -> str:
    """The request as libcurl sends it: the request line, Host (with the port only when it is not the
    scheme's default), User-Agent, Accept, Accept-Encoding, then ours and the caller's."""
    request = t.request
    parts = urlsplit(request.url)
    host = host_header(request.url)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    items = [("Host", host), ("User-Agent", t.policy.user_agent), ("Accept", "*/*")]
    items.append(("Accept-Encoding", _ACCEPT_ENCODING))
    if not request.reuse:
        items.append(("Connection", "close"))
    items.extend(request.headers)
    return clean_head(f"{request.method} {path} HTTP/1.1", items)


def _classify(easy: pycurl.Curl, t: _Transfer, code: int, message: str) -> tuple[FailureKind, str]:
    if t.flag is not None:
        return t.flag
    policy = t.policy
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        return FailureKind.DNS, "name resolution failed"
    if code == pycurl.E_COULDNT_CONNECT:
        if t.forbidden is not None:
            return FailureKind.FORBIDDEN_ADDRESS, t.forbidden[:200]
        if _info(easy, pycurl.OS_ERRNO) == errno.ECONNREFUSED:
            return FailureKind.REFUSED, "connection refused"
        return FailureKind.OTHER, _short(code, message)
    if code == pycurl.E_OPERATION_TIMEDOUT:  # libcurl's connect timeout, or the backstop
        if t.connected_at is None:
            return timed_out(Phase.CONNECT, policy)
        return timed_out(Phase.HEADERS if t.headers_done_at is None else Phase.BODY, policy)
    if code == pycurl.E_FILESIZE_EXCEEDED:
        declared = clean_headers(t.head).get("content-length", "?")
        return FailureKind.TOO_LARGE, f"content-length {declared} > limit {policy.max_body_bytes}; body not read"
    if code in _TLS_CODES:
        return FailureKind.TLS, f"TLS error: {_short(code, message)}"
    if code == pycurl.E_GOT_NOTHING:
        return FailureKind.RESET, "server closed the connection without a response"
    if code == pycurl.E_PARTIAL_FILE:
        return FailureKind.RESET, "connection closed before the promised body was complete"
    if code in (pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR):
        return FailureKind.RESET, "connection reset by peer"
    if code in _BAD_RESPONSE_CODES:
        return FailureKind.BAD_RESPONSE, f"malformed response: {_short(code, message)}"
    if code in (pycurl.E_UNSUPPORTED_PROTOCOL, pycurl.E_URL_MALFORMAT):
        if t.connected_at is not None:  # libcurl says this of an answer in no HTTP version it knows
            return FailureKind.BAD_RESPONSE, f"malformed response: {_short(code, message)}"
        return FailureKind.OTHER, f"unsupported URL: {t.request.url[:200]!r}"
    return FailureKind.OTHER, _short(code, message)


def _timings(easy: pycurl.Curl, t: _Transfer, ended: float, *, complete: bool) -> Timings:
    def ms(info: int) -> float | None:
        us = _info(easy, info)
        return us / 1000 if us else None

    lookup = ms(pycurl.NAMELOOKUP_TIME_T)
    dns_ms = lookup if lookup is not None else (0.0 if t.connected_at is not None else None)
    connect_ms = first_byte_ms = body_ms = tls_ms = None
    if t.connected_at is not None:
        if _info(easy, pycurl.NUM_CONNECTS) != 0:  # a kept-alive connection has no connect phase
            tcp, handshake = ms(pycurl.CONNECT_TIME_T), ms(pycurl.APPCONNECT_TIME_T)
            connected = handshake or tcp
            connect_ms = max(0.0, (connected or 0.0) - (lookup or 0.0))
            if handshake is not None:  # https: APPCONNECT is the end of the TLS handshake
                tls_ms = max(0.0, handshake - (tcp or 0.0))
        sent = ms(pycurl.PRETRANSFER_TIME_T)
        first = ms(pycurl.STARTTRANSFER_TIME_T)
        if first is not None and t.status is not None:
            first_byte_ms = max(0.0, first - (sent or 0.0))
            end = ms(pycurl.TOTAL_TIME_T) if complete else None
            body_ms = max(0.0, (end if end is not None else (ended - t.started) * 1000) - first)
    total = ms(pycurl.TOTAL_TIME_T) if complete else None
    return Timings(
        dns_ms=dns_ms,
        connect_ms=connect_ms,
        first_byte_ms=first_byte_ms,
        body_ms=body_ms,
        total_ms=total if total is not None else (ended - t.started) * 1000,
        tls_ms=tls_ms,
    )


_TLS_CODES = frozenset(
    getattr(pycurl, name)
    for name in (
        "E_SSL_CONNECT_ERROR",
        "E_PEER_FAILED_VERIFICATION",
        "E_SSL_CERTPROBLEM",
        "E_SSL_CIPHER",
        "E_SSL_CACERT",
        "E_SSL_CACERT_BADFILE",
        "E_SSL_ISSUER_ERROR",
        "E_SSL_PINNEDPUBKEYNOTMATCH",
        "E_SSL_INVALIDCERTSTATUS",
    )
    if hasattr(pycurl, name)
)
# 8 is CURLE_WEIRD_SERVER_REPLY, 61 bad content encoding, 100 CURLE_TOO_LARGE (a header over libcurl's cap).
_BAD_RESPONSE_CODES = frozenset({8, pycurl.E_BAD_CONTENT_ENCODING, 100})


def refused_nul_header(result: FetchResult) -> bool:
    """libcurl refused the response because a header line holds a NUL byte (RFC 9110 lets a recipient reject
    it). The Fetcher reads such a response and cleans the header (the page is stored), so a caller
    that must keep that behaviour asks once more with the Fetcher."""
    return result.failure is FailureKind.BAD_RESPONSE and "nul byte in header" in result.detail.lower()


def _info(easy: pycurl.Curl, info: int):
    try:
        return easy.getinfo(info)
    except pycurl.error:
        return None


def _short(code: int, message: str) -> str:
    return f"curl error {code}: {' '.join(message.split())[:200]}"


# --------------------------------------------------------------------------------------------------
# The engine: a Loop on a thread of its own, for callers on many threads


class Engine:
    """Runs a Loop on its own thread; any thread may submit(). At most `max_parallel` transfers run at once,
    the rest wait their turn in submission order."""

    def __init__(self, *, max_parallel: int = 512, max_connections: int = 512) -> None:
        self.max_parallel = max(1, max_parallel)
        self._loop = Loop(max_connections=max_connections)
        self._queue: collections.deque[tuple[Request, FetchPolicy, concurrent.futures.Future]] = collections.deque()
        self._cancel: collections.deque[concurrent.futures.Future] = collections.deque()
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._loop.watch(self._wake_r.fileno(), self._drain_wake)
        self._thread = threading.Thread(target=self._run, name="fetch-engine", daemon=True)
        self._thread.start()

    def submit(self, request: Request, policy: FetchPolicy) -> concurrent.futures.Future:
        """The transfer's FetchResult, as a future; it ends within its phase budgets."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if self._closed:
            raise RuntimeError("the fetch engine is closed")
        self._queue.append((request, policy, future))
        self._wake()
        return future

    def cancel(self, future: concurrent.futures.Future) -> None:
        """End the transfer of `future` now (its result: OTHER), e.g. when its caller gave up waiting."""
        self._cancel.append(future)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()
        self._thread.join(timeout=5)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # the socket is full: the engine is being woken anyway

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _run(self) -> None:
        loop = self._loop
        running: dict[concurrent.futures.Future, _Transfer | None] = {}
        while not self._closed:
            try:
                self._start_queued(running)
                self._cancel_asked(running)
                loop.step()
            except Exception:  # a bug, not the network: no caller may wait forever on it
                log.exception("fetch engine: a step failed; the transfers in flight end as OTHER")
                for t in list(loop.active.values()):
                    try:
                        loop.abort(t, FailureKind.OTHER, "fetch engine error")
                    except Exception:
                        log.exception("fetch engine: could not end a transfer")
        for t in list(loop.active.values()):
            loop.abort(t, FailureKind.OTHER, "the engine was closed")
        while self._queue:
            _, _, future = self._queue.popleft()
            future.cancel()
        loop.close()
        self._wake_r.close()
        self._wake_w.close()

    def _start_queued(self, running: dict) -> None:
        loop = self._loop
        while self._queue and len(loop.active) < self.max_parallel:
            request, policy, future = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue

            def done(result: FetchResult, started_wall: float, future=future) -> None:
                running.pop(future, None)
                future.set_result(result)

            t = loop.start(request, policy, done)
            if t is not None:
                running[future] = t

    def _cancel_asked(self, running: dict) -> None:
        while self._cancel:
            future = self._cancel.popleft()
            t = running.get(future)
            if t is not None:
                self._loop.abort(t, FailureKind.OTHER, "the caller stopped waiting")


_shared: Engine | None = None
_shared_lock = threading.Lock()


def shared_engine() -> Engine:
    """The process's engine, started on first use; every thread of the process submits to it."""
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = Engine()
    return _shared


def _forget_shared() -> None:
    # A forked child (a prefork worker) inherits the engine object but not its thread: start afresh.
    global _shared
    _shared = None


os.register_at_fork(after_in_child=_forget_shared)


class EngineFetcher:
    """The Fetcher's call and contract on the shared engine: fetch() blocks the calling thread until its one
    transfer has ended, while the engine drives every other thread's transfers alongside.

    The name is resolved here first, as the Fetcher does (bounded by ``dns_timeout`` on the shared resolver
    threads, every address through the guard, only allowed ones dialled), then pinned for libcurl; the guard
    is checked again on the address libcurl connects to."""

    def __init__(
        self, policy: FetchPolicy, *, address_check: AddressCheck | None = None, engine: Engine | None = None
    ) -> None:
        self.policy = policy
        self._address_check = address_check
        self._engine = engine

    def close(self) -> None:
        pass  # connections belong to the shared engine, kept alive for the next request

    def __enter__(self) -> EngineFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        address_check: AddressCheck | None | object = ...,
    ) -> FetchResult:
        check = self._address_check if address_check is ... else address_check
        method = method.upper()
        started = time.monotonic()
        resolved = resolve_checked(url, method=method, check=check, dns_timeout=self.policy.dns_timeout)
        if isinstance(resolved, FetchResult):
            return resolved
        addresses, dns_ms = resolved
        request = Request(
            url,
            method=method,
            headers=tuple((headers or {}).items()),
            address_check=check,  # type: ignore[arg-type]
            addresses=addresses,
        )
        engine = self._engine or shared_engine()
        future = engine.submit(request, self.policy)
        policy = self.policy
        bound = policy.connect_timeout + policy.header_timeout + policy.body_timeout + 2 * _BACKSTOP_S + 5.0
        try:
            result: FetchResult = future.result(timeout=bound)
        except concurrent.futures.TimeoutError:
            # Never expected (every phase is bounded); a worker must not hang on the engine all the same.
            engine.cancel(future)
            result = future.result(timeout=5.0)
        result.timings.dns_ms = dns_ms
        result.timings.total_ms = (time.monotonic() - started) * 1000  # the lookup included, as the Fetcher's
        return result
