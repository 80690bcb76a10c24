"""The fetcher: one HTTP exchange per call, every failure classified, never a raised network error.

Why not plain ``requests.get(url, timeout=...)``: requests' read timeout is *per socket read*, so a
server that trickles one byte every few seconds keeps a worker busy forever, and a server that accepts
and never answers is only bounded by that per-read value.  The seed paper specifies three separate
phase budgets (connect 15 s, headers 10 s, body 20 s), so this module enforces *absolute deadlines*:

* connect: urllib3's connect timeout (covers TCP and the TLS handshake), to the IP we resolved and
  checked ourselves (``address_check``), so a DNS answer can't change between check and connect.
* headers: a deadline set when the request has been sent; every ``recv`` on the socket gets
  ``timeout = deadline - now`` (see ``crawler.fetch_hooks``), so the whole header phase is bounded.
* body: the same mechanism with a deadline ``body_timeout`` after the headers, plus a check between
  chunks, so a trickling body ends at the deadline (overshoot: scheduling noise only).

Requests/urllib3 are still used for everything else (connection pool, keep-alive, HTTP/1.1 framing,
chunked encoding, incremental gzip/deflate decoding bounded by ``max_length``).  The hooks are small
subclasses: a connection class (pinned IP, connect timing) whose ``response_class`` is an
``http.client.HTTPResponse`` subclass that swaps its socket file for a deadline-aware one.

The phases' parts: the hooks inside urllib3 (``crawler.fetch_hooks``), what a failed exchange's exception
means (``crawler.fetch_failures``), the name lookup (``crawler.resolve``) and the result gathered
(``crawler.fetch_outcome``); here the Fetcher, which runs them in turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import requests
import urllib3

from .fetch_failures import _NETWORK_ERRORS, _classify, _Failure
from .fetch_hooks import _CURRENT, _Exchange, _PinnedAdapter
from .fetch_outcome import _Outcome
from .http import FailureKind, FetchPolicy, FetchResult, Phase, body_too_large, declared_too_large, host_header
from .resolve import _origin, _resolve_into
from .sanitize import clean_head, clean_headers, header_int

__all__ = ["Fetcher"]

_CHUNK = 64 * 1024
# Methods we may transparently re-send when a pooled keep-alive connection turns out to be dead.
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})


_DEFAULT = object()  # marks 'use the fetcher's own address_check'


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
            scheme, host, port = _origin(url)
            addresses = self._resolve(host, port, outcome, check)
            self._exchange_with_retry(outcome, scheme, host, port, addresses, headers or {})
        except _Failure as failure:
            return outcome.result(failure.kind, failure.detail)
        return outcome.result(None, f"HTTP {outcome.status}")

    # -- steps ------------------------------------------------------------------------------------

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
            raise _Failure(*declared_too_large(declared, limit))

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
                    raise _Failure(*body_too_large(limit))
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
