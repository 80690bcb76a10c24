"""Many status checks at once on one thread: libcurl's multi interface (pycurl), one fresh connection each.

The monitor's check is a GET whose answer is reduced to a status, a byte count and four timings; the
crawler's ``Fetcher`` (requests/urllib3, one exchange per call, one thread per exchange) costs ~0.8 ms of
Python per check, which caps a 2-core machine well below the monitor's target. Here the HTTP work
(DNS, connect, HTTP/1.1 framing, decoding) runs in C and one Python loop drives hundreds of transfers;
Python only sees a few callbacks per check.

It keeps the ``Fetcher`` guarantees that matter for monitoring, and returns the same ``FetchResult``:

* phase budgets from ``FetchPolicy``: DNS (``dns_timeout``: a host name is looked up first by
  crawler.lookup, on its own deadline, and libcurl is handed the addresses with CURLOPT_RESOLVE; libcurl's
  own lookup would be bounded only by CONNECTTIMEOUT and reported as a connect timeout), connect
  (libcurl's CONNECTTIMEOUT), headers (a deadline from
  "connected, request about to go" to the end of the response headers) and body (a deadline from the
  end of the headers, however slowly it trickles). Header and body deadlines are enforced by this loop,
  which aborts the transfer; libcurl's own total TIMEOUT is only a backstop;
* ``max_body_bytes`` after decompression (a declared oversized Content-Length is refused unread) and
  ``max_header_bytes``;
* every failure classified as a ``FailureKind``; ``check_all`` never raises for network reasons;
* ``address_check`` per check: every address libcurl is about to dial goes through it first (forbidden
  ones are never connected to);
* no keep-alive (a fresh connection per check, ``Connection: close``), no redirects followed, no proxy
  from the environment, DNS not cached between checks: each check measures DNS, connect, first byte and
  body, as a check minutes later would.

Timings (``Timings``): dns = name lookup; connect = TCP (+TLS) after the lookup; first_byte = request
sent to first response byte; body = first response byte to the end (headers are usually in the same
packet); total = start to end. None where the phase was not reached.

Not thread-safe: one ``MultiChecker`` per thread.
"""

from __future__ import annotations

import errno
import heapq
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import pycurl

from .certs import certificate_from_curl
from .fetch import FailureKind, FetchPolicy, FetchResult, Timings
from .lookup import Lookup, Lookups, lookup_name, resolve_entry
from .sanitize import MAX_HEADER_NAME, MAX_HEADER_VALUE, clean_line

__all__ = ["CheckRequest", "MultiChecker", "TimedResult"]

AddressCheck = Callable[[str], "str | None"]

_BACKSTOP_S = 1.0  # libcurl's total timeout is the sum of the phase budgets plus this
_MAX_WAIT_S = 0.05  # longest select() wait, so a deadline is noticed within this even if libcurl sleeps
_LOOKUP_POLL_S = 0.005  # longest wait while name lookups are out: their threads can't wake select()


@dataclass(frozen=True)
class CheckRequest:
    url: str
    address_check: AddressCheck | None = None  # None: any address may be dialled
    keep_body: bool = False  # keep this check's body (a content check reads it) whatever the checker's default


class TimedResult(NamedTuple):
    started_at: float  # wall clock (time.time()) when the transfer was started
    result: FetchResult


@dataclass(eq=False)
class _Transfer:
    """One check in flight: what the callbacks saw, and its current deadline."""

    index: int
    request: CheckRequest
    policy: FetchPolicy
    heap: list[tuple[float, int, _Transfer]]  # the loop's deadlines, shared by all transfers
    easy: pycurl.Curl
    started: float = 0.0  # monotonic
    started_wall: float = 0.0
    connected_at: float | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    header_bytes: int = 0
    headers_done_at: float | None = None
    body: bytearray | None = None
    received: int = 0
    deadline: float | None = None  # the header or body deadline currently armed (monotonic)
    flag: tuple[FailureKind, str] | None = None  # set by a callback that aborted the transfer
    lookup: Lookup | None = None  # the name lookup done before the transfer (None: an IP literal)
    forbidden: str | None = None  # why address_check refused the (last) address

    # -- libcurl callbacks (C calls them inside perform()) -----------------------------------------

    def on_prereq(self, primary_ip: str, local_ip: str, primary_port: int, local_port: int) -> int:
        # Connected; the request is about to go: the header phase starts.
        self.connected_at = now = time.monotonic()
        self.deadline = now + self.policy.header_timeout
        heapq.heappush(self.heap, (self.deadline, self.index, self))
        return pycurl.PREREQFUNC_OK

    def on_header(self, line: bytes) -> int | None:
        self.header_bytes += len(line)
        if self.header_bytes > self.policy.max_header_bytes:
            self.flag = (FailureKind.BAD_RESPONSE, f"response headers exceed {self.policy.max_header_bytes} bytes")
            return -1  # not len(line): libcurl aborts with WRITE_ERROR
        if line.startswith(b"HTTP/"):  # a status line: a new response (after a 1xx) starts afresh
            parts = line.split(None, 2)
            # Three digits or no status (RFC 9110 §15): a longer number would overflow the stored column.
            code = parts[1] if len(parts) > 1 else b""
            self.status = int(code) if len(code) == 3 and code.isdigit() else None
            self.headers = {}
        elif line in (b"\r\n", b"\n"):
            if self.status is not None and self.status >= 200:  # an interim 1xx is not the answer
                self.headers_done_at = now = time.monotonic()
                self.deadline = now + self.policy.body_timeout
                heapq.heappush(self.heap, (self.deadline, self.index, self))
        else:
            name, sep, value = line.decode("latin-1").partition(":")
            name = clean_line(name, MAX_HEADER_NAME).strip().lower()
            if sep and name:
                self.headers[name] = clean_line(value, MAX_HEADER_VALUE).strip()
        return None

    def on_body(self, chunk: bytes) -> int | None:
        limit = self.policy.max_body_bytes
        room = limit - self.received
        if len(chunk) > room:
            if self.body is not None:
                self.body += chunk[:room]
            self.received = limit
            self.flag = (FailureKind.TOO_LARGE, f"body exceeds {limit} bytes (after decompression)")
            return 0  # libcurl aborts with WRITE_ERROR
        self.received += len(chunk)
        if self.body is not None:
            self.body += chunk
        return None

    def on_opensocket(self, purpose: int, address: tuple) -> socket.socket | int:
        family, socktype, protocol, addr = address
        check = self.request.address_check
        if check is not None and family in (socket.AF_INET, socket.AF_INET6):
            reason = check(str(addr[0]))
            if reason is not None:
                self.forbidden = f"{addr[0]}: {reason}"
                return pycurl.SOCKET_BAD  # libcurl tries the next address, or fails with COULDNT_CONNECT
        return socket.socket(family, socktype, protocol)


class MultiChecker:
    """GETs many URLs concurrently under a FetchPolicy; see the module docstring for the contract."""

    def __init__(self, policy: FetchPolicy, *, max_parallel: int = 256, keep_body: bool = False) -> None:
        self.policy = policy
        self.max_parallel = max(1, max_parallel)
        self.keep_body = keep_body
        self._multi = pycurl.CurlMulti()
        self._idle: list[pycurl.Curl] = []

    def close(self) -> None:
        for easy in self._idle:
            easy.close()
        self._idle = []
        self._multi.close()

    def __enter__(self) -> MultiChecker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check_all(self, requests: Sequence[CheckRequest]) -> list[TimedResult]:
        """Check every request (at most ``max_parallel`` at a time); results in the order of `requests`.

        Ends when every transfer has ended: each one is bounded by its phase budgets, so the call is
        bounded by about len(requests) / max_parallel x (connect + header + body) seconds.
        """
        results: list[TimedResult | None] = [None] * len(requests)
        heap: list[tuple[float, int, _Transfer]] = []
        waiting = list(reversed(range(len(requests))))
        active: dict[pycurl.Curl, _Transfer] = {}
        lookups = Lookups(self.policy.dns_timeout)
        try:
            while waiting or active or lookups:
                self._step(requests, results, heap, waiting, active, lookups)
        finally:
            # Only on an exception from outside (e.g. the task's time limit): leave no transfer attached
            # to the multi handle, or the next call would read messages about handles it doesn't know.
            for easy in active:
                self._multi.remove_handle(easy)
                easy.reset()
                self._idle.append(easy)
        return results  # type: ignore[return-value]

    def _step(
        self,
        requests: Sequence[CheckRequest],
        results: list[TimedResult | None],
        heap: list[tuple[float, int, _Transfer]],
        waiting: list[int],
        active: dict[pycurl.Curl, _Transfer],
        lookups: Lookups,
    ) -> None:
        """Start what fits (a name is looked up first), let libcurl work, collect what ended, enforce
        deadlines, wait a little."""
        multi = self._multi
        while waiting and len(active) + len(lookups) < self.max_parallel:
            index = waiting.pop()
            name = lookup_name(requests[index].url)
            if name is not None:
                lookups.start(index, *name)
            else:
                self._begin(index, requests, results, heap, active, None)
        for index, found in lookups.ended():
            if found.addresses:
                self._begin(index, requests, results, heap, active, found)
            else:
                results[index] = _lookup_failed(requests[index].url, found)
        while True:
            ret, _ = multi.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        while True:
            queued, ok, failed = multi.info_read()
            for easy in ok:
                self._finish(easy, active.pop(easy), None, "", results)
            for easy, code, message in failed:
                self._finish(easy, active.pop(easy), code, message, results)
            if not queued:
                break
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            deadline, _, t = heapq.heappop(heap)
            # Stale entries: a later phase re-armed the transfer, or it ended (and its easy handle may
            # already carry another transfer: compare the transfer, not the handle).
            if t.deadline != deadline or active.get(t.easy) is not t:
                continue
            kind = FailureKind.HEADER_TIMEOUT if t.headers_done_at is None else FailureKind.BODY_TIMEOUT
            budget = self.policy.header_timeout if kind is FailureKind.HEADER_TIMEOUT else self.policy.body_timeout
            phase = "response headers" if kind is FailureKind.HEADER_TIMEOUT else "body"
            t.flag = (kind, f"{phase} not complete within {budget:g}s")
            self._finish(t.easy, active.pop(t.easy), pycurl.E_OPERATION_TIMEDOUT, "", results)
        if active:
            wait = min(_MAX_WAIT_S, max(0.0, heap[0][0] - now) if heap else _MAX_WAIT_S)
            curl_wait = multi.timeout()
            if curl_wait >= 0:
                wait = min(wait, curl_wait / 1000)
            if lookups:  # select() does not see a lookup's thread finish: look again soon
                wait = min(wait, _LOOKUP_POLL_S)
            if wait > 0:
                multi.select(wait)
        elif lookups:
            deadline = lookups.next_deadline()
            lookups.wait(min(_MAX_WAIT_S, max(0.0, deadline - now) if deadline is not None else _MAX_WAIT_S))

    def _begin(
        self,
        index: int,
        requests: Sequence[CheckRequest],
        results: list[TimedResult | None],
        heap: list[tuple[float, int, _Transfer]],
        active: dict[pycurl.Curl, _Transfer],
        found: Lookup | None,
    ) -> None:
        easy = self._idle.pop() if self._idle else pycurl.Curl()
        t = _Transfer(index, requests[index], self.policy, heap, easy, lookup=found)
        if self._start(t, results):
            active[easy] = t

    # -- one transfer -----------------------------------------------------------------------------

    def _start(self, t: _Transfer, results: list[TimedResult | None]) -> bool:
        """Set the transfer up and add it to the multi handle; False if it ended at once (bad URL)."""
        policy = self.policy
        easy = t.easy
        t.started = time.monotonic()
        t.started_wall = time.time() if t.lookup is None else t.lookup.started_wall  # the check began with its lookup
        if self.keep_body or t.request.keep_body:
            t.body = bytearray()
        try:
            easy.setopt(pycurl.URL, t.request.url)
            easy.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
            easy.setopt(pycurl.NOSIGNAL, 1)
            easy.setopt(pycurl.NOPROXY, "*")  # never a proxy from the environment: we dial checked IPs only
            easy.setopt(pycurl.FRESH_CONNECT, 1)
            easy.setopt(pycurl.FORBID_REUSE, 1)
            easy.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)
            if t.lookup is not None:
                # Dial what the lookup found (every address still passes on_opensocket's check). The entry
                # stays in the multi handle's cache, but every transfer to this name sets its own first.
                easy.setopt(pycurl.RESOLVE, [resolve_entry(t.lookup)])
            easy.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
            easy.setopt(pycurl.USERAGENT, policy.user_agent)
            easy.setopt(pycurl.HTTPHEADER, ["Connection: close"])
            easy.setopt(pycurl.ACCEPT_ENCODING, "gzip, deflate")
            easy.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(policy.connect_timeout * 1000)))
            backstop = policy.connect_timeout + policy.header_timeout + policy.body_timeout + _BACKSTOP_S
            easy.setopt(pycurl.TIMEOUT_MS, int(backstop * 1000))
            easy.setopt(pycurl.MAXFILESIZE_LARGE, policy.max_body_bytes)
            easy.setopt(pycurl.CAINFO, _ca_bundle())
            if t.request.url[:8].lower() == "https://":
                easy.setopt(pycurl.OPT_CERTINFO, 1)  # the certificate from the handshake, even a rejected one
            easy.setopt(pycurl.PREREQFUNCTION, t.on_prereq)
            easy.setopt(pycurl.HEADERFUNCTION, t.on_header)
            easy.setopt(pycurl.WRITEFUNCTION, t.on_body)
            if t.request.address_check is not None:
                easy.setopt(pycurl.OPENSOCKETFUNCTION, t.on_opensocket)
            self._multi.add_handle(easy)
        except (pycurl.error, UnicodeError, TypeError, ValueError) as exc:  # e.g. a non-ASCII URL
            t.flag = (FailureKind.OTHER, f"invalid URL: {type(exc).__name__}: {str(exc)[:200]}")
            self._finish(easy, t, -1, "", results, added=False)
            return False
        return True

    def _finish(
        self,
        easy: pycurl.Curl,
        t: _Transfer,
        code: int | None,
        message: str,
        results: list[TimedResult | None],
        *,
        added: bool = True,
    ) -> None:
        ended = time.monotonic()
        if added:
            self._multi.remove_handle(easy)  # for a transfer still running: aborts it, drops its connection
        failure, detail = self._classify(easy, t, code, message) if code is not None else (None, f"HTTP {t.status}")
        timings = self._timings(easy, t, ended, complete=code is None)
        result = FetchResult(
            url=t.request.url,
            method="GET",
            status=t.status if (failure is None or t.headers_done_at is not None) else None,
            headers=t.headers if t.headers_done_at is not None else {},
            body=bytes(t.body) if t.body is not None else b"",
            failure=failure,
            detail=clean_line(detail, 500),
            truncated=failure is FailureKind.TOO_LARGE,
            bytes_received=t.received,
            timings=timings,
            peer_ip=(_info(easy, pycurl.PRIMARY_IP) or None) if t.connected_at is not None else None,
            certificate=certificate_from_curl(_info(easy, pycurl.INFO_CERTINFO))
            if t.request.url[:8].lower() == "https://"
            else None,
        )
        results[t.index] = TimedResult(t.started_wall, result)
        easy.reset()
        self._idle.append(easy)

    def _classify(self, easy: pycurl.Curl, t: _Transfer, code: int, message: str) -> tuple[FailureKind, str]:
        if t.flag is not None:
            return t.flag
        policy = self.policy
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
                return FailureKind.CONNECT_TIMEOUT, f"no connection within {policy.connect_timeout:g}s"
            if t.headers_done_at is None:
                return FailureKind.HEADER_TIMEOUT, f"no response headers within {policy.header_timeout:g}s"
            return FailureKind.BODY_TIMEOUT, f"body not complete within {policy.body_timeout:g}s"
        if code == pycurl.E_FILESIZE_EXCEEDED:
            declared = t.headers.get("content-length", "?")
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

    @staticmethod
    def _timings(easy: pycurl.Curl, t: _Transfer, ended: float, *, complete: bool) -> Timings:
        def ms(info: int) -> float | None:
            us = _info(easy, info)
            return us / 1000 if us else None

        lookup = ms(pycurl.NAMELOOKUP_TIME_T)
        dns_ms = lookup if lookup is not None else (0.0 if t.connected_at is not None else None)
        before = 0.0  # our own lookup, done before libcurl's clock started
        if t.lookup is not None:
            dns_ms, before = t.lookup.ms, t.lookup.ms
        connect_ms = first_byte_ms = body_ms = None
        if t.connected_at is not None:
            connected = ms(pycurl.APPCONNECT_TIME_T) or ms(pycurl.CONNECT_TIME_T)
            connect_ms = max(0.0, (connected or 0.0) - (lookup or 0.0))
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
            total_ms=before + (total if total is not None else (ended - t.started) * 1000),
        )


def _lookup_failed(url: str, found: Lookup) -> TimedResult:
    """The result of a check whose name lookup failed or ran out of time: a DNS failure, never dialled."""
    result = FetchResult(
        url=url,
        method="GET",
        status=None,
        headers={},
        body=b"",
        failure=FailureKind.DNS,
        detail=clean_line(found.detail, 500),
        truncated=False,
        bytes_received=0,
        timings=Timings(None, None, None, None, found.ms),
        peer_ip=None,
    )
    return TimedResult(found.started_wall, result)


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


def _info(easy: pycurl.Curl, info: int):
    try:
        return easy.getinfo(info)
    except pycurl.error:
        return None


def _short(code: int, message: str) -> str:
    return f"curl error {code}: {' '.join(message.split())[:200]}"


_CA: str | None = None


def _ca_bundle() -> str:
    """The CA bundle requests uses (certifi), so https checks verify like the Fetcher's."""
    global _CA
    if _CA is None:
        import certifi

        _CA = certifi.where()
    return _CA
