"""The fetcher: one HTTP exchange per call, every failure classified, never a raised network error.

Why not plain ``requests.get(url, timeout=...)``: requests' read timeout is *per socket read*, so a
server that trickles one byte every few seconds keeps a worker busy forever, and a server that accepts
and never answers is only bounded by that per-read value.  The seed paper specifies three separate
phase budgets (connect 15 s, headers 10 s, body 20 s), so this module enforces *absolute deadlines*:

* connect: urllib3's connect timeout (covers TCP and the TLS handshake), to the IP we resolved and
  checked ourselves (``address_check``), so a DNS answer can't change between check and connect.
* headers: a deadline set when the request has been sent; every ``recv`` on the socket gets
  ``timeout = deadline - now`` (see ``_DeadlineReader``), so the whole header phase is bounded.
* body: the same mechanism with a deadline ``body_timeout`` after the headers, plus a check between
  chunks, so a trickling body ends at the deadline (overshoot: scheduling noise only).

Requests/urllib3 are still used for everything else (connection pool, keep-alive, HTTP/1.1 framing,
chunked encoding, incremental gzip/deflate decoding bounded by ``max_length``).  The hooks are small
subclasses: a connection class (pinned IP, connect timing) whose ``response_class`` is an
``http.client.HTTPResponse`` subclass that swaps its socket file for a deadline-aware one.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import http.client
import io
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    IncompleteRead,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.util.connection import create_connection

from .http import (
    DEFAULT_PORTS,
    FailureKind,
    FetchPolicy,
    FetchResult,
    Phase,
    Timings,
    host_header,
    timed_out,
)
from .lookup import lookup_submit
from .sanitize import clean_head, clean_headers, clean_line, header_int

# The contract (crawler.http) is re-exported: callers that take a Fetcher take its result types from here too.
__all__ = ["FailureKind", "FetchPolicy", "FetchResult", "Fetcher", "Timings", "resolve_checked"]

_CHUNK = 64 * 1024
# Methods we may transparently re-send when a pooled keep-alive connection turns out to be dead.
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})


# --------------------------------------------------------------------------------------------------
# Per-fetch state shared with the connection / response hooks.
#
# The hooks run deep inside urllib3 (connection creation, http.client response construction) where we
# can't pass arguments; a ContextVar carries the current exchange there.  It is set and reset around
# each send in the calling thread, so concurrent Fetchers in other threads don't see each other's state.


@dataclass
class _Exchange:
    addresses: tuple[str, ...]  # resolved IPs that passed address_check, in resolver order
    header_timeout: float
    max_header_bytes: int
    phase: Phase = Phase.REQUEST
    deadline: float | None = None  # monotonic; enforced on every recv while set
    new_connection: bool = False
    connect_ms: float | None = None
    request_sent_at: float | None = None
    first_byte_at: float | None = None
    peer_ip: str | None = None

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


_CURRENT: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar("crawler_fetch_exchange", default=None)


class _DeadlineReader(io.RawIOBase):
    """Raw socket reader that bounds every ``recv`` by the exchange's absolute deadline.

    http.client reads headers line by line and bodies through a BufferedReader, i.e. many ``recv``
    calls per logical read; a plain socket timeout restarts on each of them.  Lowering the socket
    timeout to the *remaining* time before each ``recv`` makes the deadline hold across all of them.
    It wraps ``sock.makefile`` (not the socket itself) so the socket's io-reference counting still
    defers the real close while http.client owns the response after a ``Connection: close``.
    """

    def __init__(self, sock: socket.socket, exchange: _Exchange) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._exchange = exchange

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, buffer: memoryview | bytearray) -> int | None:  # type: ignore[override]
        remaining = self._exchange.remaining()
        if remaining is not None:
            if remaining <= 0:
                raise TimeoutError(f"{self._exchange.phase.value} deadline passed")
            self._sock.settimeout(remaining)
        n = self._raw.readinto(buffer)
        if n and self._exchange.first_byte_at is None:
            self._exchange.first_byte_at = time.monotonic()
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _HeaderTooLarge(http.client.HTTPException):
    pass


class _DeadlineHTTPResponse(http.client.HTTPResponse):
    """http.client response reading through ``_DeadlineReader`` and capping the total header size."""

    def __init__(self, sock: socket.socket, *args: object, **kwargs: object) -> None:
        super().__init__(sock, *args, **kwargs)  # type: ignore[arg-type]
        exchange = _CURRENT.get()
        self._exchange = exchange
        if exchange is None:  # used outside Fetcher.fetch: behave like the stock class
            return
        # Constructed by getresponse() right after the request went out: the header phase starts now.
        now = time.monotonic()
        exchange.phase = Phase.HEADERS
        exchange.request_sent_at = now
        exchange.deadline = now + exchange.header_timeout
        try:
            exchange.peer_ip = sock.getpeername()[0]
        except OSError:
            pass  # the peer vanished already; the read below will report it
        self.fp.close()  # nothing was read through it yet
        self.fp = io.BufferedReader(_DeadlineReader(sock, exchange))

    def begin(self) -> None:
        super().begin()  # http.client already caps lines (64 KiB) and header count (100)
        if self._exchange is None:
            return
        size = sum(len(name) + len(value) + 4 for name, value in self.msg.items())
        if size > self._exchange.max_header_bytes:
            raise _HeaderTooLarge(f"response headers total {size} bytes > {self._exchange.max_header_bytes}")


class _PinnedConnectionMixin:
    """Connects to the IPs the Fetcher resolved and checked, not to whatever DNS says a moment later."""

    response_class = _DeadlineHTTPResponse
    # provided by urllib3's HTTPConnection
    host: str
    port: int
    timeout: float | None
    source_address: tuple[str, int] | None
    socket_options: list[tuple[int, int, int | bytes]] | None

    def connect(self) -> None:
        exchange = _CURRENT.get()
        if exchange is None:
            super().connect()  # type: ignore[misc]
            return
        exchange.phase = Phase.CONNECT
        exchange.new_connection = True
        started = time.monotonic()
        super().connect()  # type: ignore[misc]  # TCP (_new_conn below) + TLS handshake for https
        exchange.connect_ms = (time.monotonic() - started) * 1000
        exchange.phase = Phase.REQUEST

    def _new_conn(self) -> socket.socket:
        exchange = _CURRENT.get()
        if exchange is None:
            return super()._new_conn()  # type: ignore[misc, no-any-return]
        last_error: OSError | None = None
        for ip in exchange.addresses:
            try:
                sock = create_connection(
                    (ip, self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except TimeoutError as exc:
                # Don't try the next address: the connect budget is for the whole phase.
                raise ConnectTimeoutError(self, f"connect to {ip}:{self.port} timed out after {self.timeout}s") from exc
            except OSError as exc:
                last_error = exc
                continue
            exchange.peer_ip = ip
            return sock
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}") from last_error  # type: ignore[arg-type]


class _PinnedHTTPConnection(_PinnedConnectionMixin, HTTPConnection):
    pass


class _PinnedHTTPSConnection(_PinnedConnectionMixin, HTTPSConnection):
    pass


class _PinnedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PinnedHTTPConnection


class _PinnedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


class _PinnedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: object, **kwargs: object) -> None:
        super().init_poolmanager(*args, **kwargs)  # type: ignore[arg-type]
        self.poolmanager.pool_classes_by_scheme = {"http": _PinnedHTTPPool, "https": _PinnedHTTPSPool}


# --------------------------------------------------------------------------------------------------
# Failure classification


class _Failure(Exception):
    """Internal: a classified failure, raised inside fetch() and turned into a FetchResult."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it wraps: requests/urllib3 nest the real cause in args/.reason."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]
        stack.extend(item for item in nested if isinstance(item, BaseException))


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())  # status lines etc. may carry CR/LF
    return f"{type(exc).__name__}: {text[:limit]}"


def _classify(exc: BaseException, phase: Phase, policy: FetchPolicy) -> tuple[FailureKind, str]:
    """Map a requests/urllib3/socket exception to a FailureKind; ``phase`` disambiguates timeouts."""
    causes = list(_chain(exc))

    def has(*types: type[BaseException]) -> BaseException | None:
        return next((c for c in causes if isinstance(c, types)), None)

    if found := has(_HeaderTooLarge):
        return FailureKind.BAD_RESPONSE, str(found)
    if has(socket.gaierror, NameResolutionError):
        return FailureKind.DNS, "name resolution failed"
    if has(ConnectionRefusedError):
        return FailureKind.REFUSED, "connection refused"
    # urllib3's NewConnectionError subclasses ConnectTimeoutError although it is any connect failure.
    if any(isinstance(c, ConnectTimeoutError) and not isinstance(c, NewConnectionError) for c in causes):
        return FailureKind.CONNECT_TIMEOUT, f"no connection within {policy.connect_timeout:g}s"
    if found := has(ssl.SSLError, ssl.CertificateError, requests.exceptions.SSLError):
        return FailureKind.TLS, f"TLS error: {_short(found)}"
    if has(ReadTimeoutError, socket.timeout, requests.exceptions.Timeout):
        return timed_out(phase, policy)
    if found := has(IncompleteRead, http.client.IncompleteRead):
        return FailureKind.RESET, f"connection closed before the promised body was complete ({found})"
    if has(http.client.RemoteDisconnected):
        return FailureKind.RESET, "server closed the connection without a response"
    if has(ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
        return FailureKind.RESET, "connection reset by peer"
    if found := has(DecodeError, requests.exceptions.ContentDecodingError):
        return FailureKind.BAD_RESPONSE, f"cannot decode body: {_short(found)}"
    if found := has(http.client.HTTPException):
        return FailureKind.BAD_RESPONSE, f"malformed response: {_short(found)}"
    # Last resort: the most specific thing we know, e.g. EHOSTUNREACH inside a NewConnectionError.
    found = has(NewConnectionError, requests.exceptions.InvalidURL, requests.exceptions.InvalidHeader)
    found = found or has(ProtocolError, OSError) or exc
    return FailureKind.OTHER, _short(found)


# Exceptions a fetch may raise for network/protocol reasons.  Anything else is a bug and propagates.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)


# --------------------------------------------------------------------------------------------------
# The fetcher


@dataclass
class _Outcome:
    """Mutable accumulator for one fetch; frozen into a FetchResult at the end."""

    url: str
    method: str
    started: float
    dns_ms: float | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    headers_at: float | None = None
    body_done_at: float | None = None
    exchange: _Exchange | None = None
    request_head: str = ""
    response_head: str = ""

    def result(self, failure: FailureKind | None = None, detail: str = "ok") -> FetchResult:
        now = time.monotonic()
        ex = self.exchange
        first_byte_ms = None
        if ex is not None and ex.first_byte_at is not None and ex.request_sent_at is not None:
            first_byte_ms = (ex.first_byte_at - ex.request_sent_at) * 1000
        body_ms = None
        if self.headers_at is not None:
            body_ms = ((self.body_done_at or now) - self.headers_at) * 1000
        return FetchResult(
            url=self.url,
            method=self.method,
            status=self.status,
            headers=self.headers,
            body=bytes(self.body),
            failure=failure,
            detail=clean_line(detail, 500),
            truncated=self.truncated,
            bytes_received=len(self.body),
            timings=Timings(
                dns_ms=self.dns_ms,
                connect_ms=ex.connect_ms if ex else None,
                first_byte_ms=first_byte_ms,
                body_ms=body_ms,
                total_ms=(now - self.started) * 1000,
            ),
            peer_ip=ex.peer_ip if ex else None,
            request_head=self.request_head,
            response_head=self.response_head,
        )


_DEFAULT = object()  # marks 'use the fetcher's own address_check'


def lookup_many(
    names: Sequence[tuple[str, int]], *, timeout: float, check: Callable[[str], str | None] | None = None
) -> dict[tuple[str, int], str | None]:
    """Each (host, port) -> the address the fetcher would dial first (the first one `check` allows, in resolver
    order), or None when the name does not resolve, resolves only to forbidden addresses, or has not answered
    within `timeout` seconds of the call (all names are asked at once, on the fetcher's resolver threads, so
    a hung resolver costs `timeout` once, not once per name)."""
    futures = {
        (host, port): lookup_submit(host.strip("[]"), port, timeout=timeout) for host, port in dict.fromkeys(names)
    }
    deadline = time.monotonic() + timeout
    out: dict[tuple[str, int], str | None] = {}
    for key, future in futures.items():
        try:
            infos = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except (concurrent.futures.TimeoutError, OSError, UnicodeError):
            # A lookup still running is left to finish on its own, as in a fetch; one still queued never runs.
            future.cancel()
            out[key] = None
            continue
        addresses = dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos)
        out[key] = next((ip for ip in addresses if check is None or check(ip) is None), None)
    return out


class Fetcher:
    """Fetches single URLs under a FetchPolicy.  Not thread-safe: use one Fetcher per worker thread."""

    def __init__(self, policy: FetchPolicy, *, address_check: Callable[[str], str | None] | None = None) -> None:
        self.policy = policy
        self._address_check = address_check
        # One session per origin so keep-alive connections are reused across consecutive fetches.
        self._sessions: dict[tuple[str, str, int], requests.Session] = {}

    def close(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            session.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        address_check: Callable[[str], str | None] | None | object = _DEFAULT,
    ) -> FetchResult:
        """Fetch one URL. `address_check` replaces the fetcher's own guard for this call (None: no guard),
        so one fetcher per thread can serve trusted and untrusted servers alike."""
        check = self._address_check if address_check is _DEFAULT else address_check
        method = method.upper()
        outcome = _Outcome(url=url, method=method, started=time.monotonic())
        try:
            scheme, host, port = self._origin(url)
            addresses = self._resolve(host, port, outcome, check)
            self._exchange_with_retry(outcome, scheme, host, port, addresses, headers or {})
        except _Failure as failure:
            return outcome.result(failure.kind, failure.detail)
        return outcome.result(None, f"HTTP {outcome.status}")

    # -- steps ------------------------------------------------------------------------------------

    @staticmethod
    def _origin(url: str) -> tuple[str, str, int]:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:  # e.g. a non-numeric or out-of-range port
            raise _Failure(FailureKind.OTHER, f"invalid URL: {exc}") from exc
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            raise _Failure(FailureKind.OTHER, f"unsupported URL: {url!r}")
        return scheme, parts.hostname, port or DEFAULT_PORTS[scheme]

    def _resolve(self, host: str, port: int, outcome: _Outcome, check) -> tuple[str, ...]:
        return _resolve_into(outcome, host, port, check, self.policy.dns_timeout)

    def _session(self, scheme: str, host: str, port: int) -> requests.Session:
        key = (scheme, host.lower(), port)
        session = self._sessions.get(key)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # no proxies/netrc from the environment: we dial checked IPs only
            adapter = _PinnedAdapter(max_retries=0, pool_connections=1, pool_maxsize=2)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            session.headers.update({"User-Agent": self.policy.user_agent, "Accept-Encoding": "gzip, deflate"})
            self._sessions[key] = session
        return session

    def _exchange_with_retry(
        self,
        outcome: _Outcome,
        scheme: str,
        host: str,
        port: int,
        addresses: tuple[str, ...],
        headers: dict[str, str],
    ) -> None:
        """Send once; resend once if a *reused* keep-alive connection was closed under us.

        That race (server closes an idle connection just as we reuse it) is normal HTTP/1.1 life, not a
        property of the site, so it must not be recorded as a RESET failure.
        """
        for attempt in (1, 2):
            exchange = _Exchange(addresses, self.policy.header_timeout, self.policy.max_header_bytes)
            outcome.exchange = exchange
            try:
                self._exchange(outcome, self._session(scheme, host, port), headers)
                return
            except _Failure as failure:
                stale = (
                    failure.kind is FailureKind.RESET
                    and exchange.phase is not Phase.BODY
                    and not exchange.new_connection
                    and exchange.first_byte_at is None
                    and outcome.method in _IDEMPOTENT
                )
                if attempt == 2 or not stale:
                    raise

    def _exchange(self, outcome: _Outcome, session: requests.Session, headers: dict[str, str]) -> None:
        exchange = outcome.exchange
        assert exchange is not None
        token = _CURRENT.set(exchange)
        try:
            response = self._send(outcome, session, headers)
            self._read_body(outcome, response)
        finally:
            _CURRENT.reset(token)

    def _send(self, outcome: _Outcome, session: requests.Session, headers: dict[str, str]) -> requests.Response:
        exchange = outcome.exchange
        assert exchange is not None
        policy = self.policy
        try:
            response = session.request(
                outcome.method,
                outcome.url,
                headers=headers,
                stream=True,
                allow_redirects=False,
                # The read value is only the initial per-recv timeout; _DeadlineReader enforces the total.
                timeout=(policy.connect_timeout, policy.header_timeout),
            )
        except _NETWORK_ERRORS as exc:
            raise _Failure(*_classify(exc, exchange.phase, self.policy)) from exc
        outcome.headers_at = time.monotonic()
        outcome.status = response.status_code
        outcome.headers = clean_headers(response.headers.items())
        outcome.request_head = _request_head(response.request)
        outcome.response_head = _response_head(response)
        return response

    def _read_body(self, outcome: _Outcome, response: requests.Response) -> None:
        exchange = outcome.exchange
        assert exchange is not None and outcome.headers_at is not None
        raw = response.raw
        limit = self.policy.max_body_bytes
        declared = _content_length(outcome.headers)
        if outcome.method != "HEAD" and declared is not None and declared > limit:
            self._abandon(raw)
            outcome.truncated = True
            outcome.body_done_at = time.monotonic()
            raise _Failure(FailureKind.TOO_LARGE, f"content-length {declared} > limit {limit}; body not read")

        exchange.phase = Phase.BODY
        exchange.deadline = outcome.headers_at + self.policy.body_timeout
        body = outcome.body
        try:
            while True:
                # The recv-level deadline already bounds each read; this check also covers time spent
                # decompressing buffered data, which needs no recv.
                if time.monotonic() >= exchange.deadline:
                    raise TimeoutError("body deadline passed")
                # read1: return what one recv gave (a slow server's bytes aren't held back in a buffer
                # we'd lose on timeout); max_length-bounded decoding keeps a gzip bomb incremental.
                chunk = raw.read1(min(_CHUNK, limit - len(body) + 1), decode_content=True)
                if not chunk:
                    break
                body += chunk
                if len(body) > limit:
                    del body[limit:]
                    outcome.truncated = True
                    self._abandon(raw)
                    raise _Failure(FailureKind.TOO_LARGE, f"body exceeds {limit} bytes (after decompression)")
        except _NETWORK_ERRORS as exc:
            self._abandon(raw)
            raise _Failure(*_classify(exc, exchange.phase, self.policy)) from exc
        finally:
            outcome.body_done_at = time.monotonic()
        # Fully read: hand the connection back to the pool for keep-alive.
        raw.release_conn()

    @staticmethod
    def _abandon(raw: urllib3.response.BaseHTTPResponse) -> None:
        """Drop a connection with unread or undefined data on it: it can't carry another request."""
        try:
            raw.close()
        except _NETWORK_ERRORS:
            pass  # the connection is being discarded; an error while closing it changes nothing
        raw.release_conn()


def resolve_checked(
    url: str, *, method: str, check: Callable[[str], str | None] | None, dns_timeout: float
) -> tuple[tuple[str, ...], float] | FetchResult:
    """The addresses of `url`'s host that `check` allows (all of them when it is None) and the lookup's
    milliseconds, resolved as the Fetcher resolves (bounded by `dns_timeout`); or the failed fetch
    (DNS, FORBIDDEN_ADDRESS, an unsupported URL) when there is nothing to dial. For callers that dial
    themselves (crawler.engine)."""
    outcome = _Outcome(url=url, method=method.upper(), started=time.monotonic())
    try:
        _scheme, host, port = Fetcher._origin(url)
        addresses = _resolve_into(outcome, host, port, check, dns_timeout)
    except _Failure as failure:
        return outcome.result(failure.kind, failure.detail)
    return addresses, outcome.dns_ms or 0.0


def _resolve_into(outcome: _Outcome, host: str, port: int, check, dns_timeout: float) -> tuple[str, ...]:
    """Resolve once, time it, and filter through address_check; the connection is pinned to the result.

    getaddrinfo has no timeout parameter, and a resolver that never answers would hold the worker for
    as long as the system's resolver settings say (minutes with retries). So the lookup runs on a
    small shared pool of resolver threads and is waited for at most `dns_timeout`; a lookup still
    running then is left to finish on its own and the fetch fails as DNS. An IP literal needs no
    resolver: it is its own address.
    """
    started = time.monotonic()
    try:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            future = lookup_submit(host, port, timeout=dns_timeout)
            try:
                infos = future.result(timeout=dns_timeout)
            except concurrent.futures.TimeoutError:
                future.cancel()  # still queued: it never runs (crawler.lookup)
                raise
            addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        else:
            addresses = (str(literal),)
    except concurrent.futures.TimeoutError as exc:
        detail = f"cannot resolve {host}: no answer within {dns_timeout:g}s"
        raise _Failure(FailureKind.DNS, detail) from exc
    except (socket.gaierror, UnicodeError) as exc:
        raise _Failure(FailureKind.DNS, f"cannot resolve {host}: {exc}") from exc
    finally:
        outcome.dns_ms = (time.monotonic() - started) * 1000
    if not addresses:
        raise _Failure(FailureKind.DNS, f"no addresses for {host}")
    if check is None:
        return addresses
    reasons = {ip: check(ip) for ip in addresses}
    # Only addresses that pass are ever dialled, so a host with a mix of good and forbidden
    # addresses is fetched from a good one; it is refused only when none is allowed.
    allowed = tuple(ip for ip in addresses if reasons[ip] is None)
    if not allowed:
        # Not the address nor its kind: the detail is shown to readers, and would tell what an internal name
        # resolves to to anyone who may make the crawl or the monitor look a name up (a job seed, a URL).
        refused = f"{host}: not an address the crawl may reach (CRAWL_ALLOW_PRIVATE)"
        raise _Failure(FailureKind.FORBIDDEN_ADDRESS, refused)
    return allowed


def _content_length(headers: dict[str, str]) -> int | None:
    return header_int(headers.get("content-length"))


_HTTP_VERSIONS = {9: "HTTP/0.9", 10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}


def _request_head(request: requests.PreparedRequest) -> str:
    """The request as http.client sent it: the request line, Host first (http.client adds it, with the
    port only when it is not the scheme's default), then the session's and the caller's headers."""
    items = [
        ("Host", host_header(request.url or "")),
        *((k, v) for k, v in request.headers.items() if k.lower() != "host"),
    ]
    return clean_head(f"{request.method} {request.path_url} HTTP/1.1", items)


def _response_head(response: requests.Response) -> str:
    raw = response.raw
    version = _HTTP_VERSIONS.get(getattr(raw, "version", 11), "HTTP/1.1")
    headers = raw.headers
    # urllib3's header dict yields a repeated header (Set-Cookie, Link) once per line, as received.
    items = headers.iteritems() if hasattr(headers, "iteritems") else headers.items()
    return clean_head(f"{version} {response.status_code} {response.reason or ''}".rstrip(), items)
