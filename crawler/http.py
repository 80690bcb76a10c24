"""The HTTP contract of crawler and monitor: what one exchange yields, however it was made.

Both HTTP stacks produce it: the fetch engine (``crawler.engine``, libcurl's multi interface, the default
for the agents and under the monitor's ``crawler.multicheck``) and the thread-per-exchange fetcher
(``crawler.fetch``, requests/urllib3, ``CRAWL_FETCH_ENGINE=threads``). Here: the result (``FetchResult``,
``Timings``), why an exchange failed (``FailureKind``), the limits it ran under (``FetchPolicy``), and
what both stacks must say alike: a timed-out phase's kind and words, the words of every other failure both
can meet, the Host header of the request head kept for the archive, the scheme's default ports and the CA
bundle https is verified against. Each stack keeps only what differs: how it learns what happened (an
exception chain, a libcurl code).
``tests/test_fetch.py`` runs the same cases on both.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .certs import Certificate

__all__ = [
    "DEFAULT_PORTS", "NOT_RESOLVED", "NO_RESPONSE", "PEER_RESET", "REFUSED", "AddressCheck", "FailureKind",
    "FetchPolicy", "FetchResult", "Phase", "Timings", "body_cut", "body_too_large", "ca_bundle",
    "declared_too_large", "host_header", "malformed", "timed_out", "tls_error", "unsupported_url",
]  # fmt: skip

DEFAULT_PORTS = {"http": 80, "https": 443}

# The guard every client dials through: given an address (IP text), why it may not be dialled, or None
# when it may. Built from the settings (the private-address rule); None in its place: any address.
AddressCheck = Callable[[str], "str | None"]


class FailureKind(enum.StrEnum):
    """Why a fetch did not yield a complete HTTP response.  Values are stored in the database."""

    DNS = "dns"
    REFUSED = "refused"
    CONNECT_TIMEOUT = "connect_timeout"
    HEADER_TIMEOUT = "header_timeout"
    BODY_TIMEOUT = "body_timeout"
    RESET = "reset"
    TOO_LARGE = "too_large"
    TOO_MANY_REDIRECTS = "too_many_redirects"  # never produced here (no redirects followed); for callers
    HTTP_STATUS = "http_status"  # never produced here (4xx/5xx are responses); for callers
    TLS = "tls"
    CONTENT = "content"  # never produced here: the monitor's content check failed on a valid answer
    BAD_RESPONSE = "bad_response"
    FORBIDDEN_ADDRESS = "forbidden_address"
    OTHER = "other"


INCOMPLETE = frozenset({FailureKind.BODY_TIMEOUT, FailureKind.RESET, FailureKind.BAD_RESPONSE})


@dataclass(frozen=True)
class FetchPolicy:
    connect_timeout: float = 15.0  # seconds to establish TCP (+TLS)
    header_timeout: float = 10.0  # seconds from request sent to the response headers
    body_timeout: float = 20.0  # TOTAL seconds to receive the body, however slowly it trickles
    max_body_bytes: int = 10 * 1024 * 1024  # after decompression; larger bodies are cut and flagged too_large
    user_agent: str = "crawladmin/0.1"
    max_header_bytes: int = 64 * 1024  # sum of header sizes; over it -> BAD_RESPONSE (header flood)
    dns_timeout: float = 5.0  # seconds for the name lookup; over it -> DNS


@dataclass
class Timings:
    """Milliseconds; None where not measured (e.g. connect_ms on a reused keep-alive connection)."""

    dns_ms: float | None
    connect_ms: float | None  # TCP connect (+ TLS handshake) of a new connection
    first_byte_ms: float | None  # request sent -> first response byte
    body_ms: float | None  # headers parsed -> body finished (or abandoned)
    total_ms: float
    tls_ms: float | None = None  # the TLS handshake of a new https connection, part of connect_ms


@dataclass
class FetchResult:
    url: str
    method: str
    status: int | None  # None when no HTTP response was received
    headers: dict[str, str]  # lower-cased names
    body: bytes  # decompressed, at most max_body_bytes (empty for HEAD)
    failure: FailureKind | None  # None for any complete HTTP response, including 4xx/5xx
    detail: str
    truncated: bool  # body cut at max_body_bytes (failure == TOO_LARGE)
    bytes_received: int  # decompressed body bytes read
    timings: Timings
    peer_ip: str | None
    check_id: int | None = None  # the caller's record of this request (crawladmin's StatusCheck row), if any
    certificate: Certificate | None = None  # https: the server's certificate from the handshake (multicheck)
    # The exchange as it went over the wire, for an archive record (WARC): the request line and headers we
    # sent, the status line and headers as received (original case, order and repeats), each bounded
    # (sanitize.clean_head). Empty when no request was sent / no response came.
    request_head: str = ""
    response_head: str = ""

    @property
    def responded(self) -> bool:
        return self.status is not None

    @property
    def incomplete(self) -> bool:
        """Headers came but the body did not arrive whole (timed out, cut off, undecodable): not a valid
        response. A body cut at max_body_bytes is not incomplete: we cut it on purpose."""
        return self.status is not None and self.failure in INCOMPLETE


class Phase(enum.StrEnum):
    """Where an exchange was when it ended."""

    REQUEST = "request"  # sending the request on an (possibly reused) connection
    CONNECT = "connect"
    HEADERS = "headers"
    BODY = "body"


def timed_out(phase: Phase, policy: FetchPolicy) -> tuple[FailureKind, str]:
    """The failure of a phase whose deadline passed, in the words every stack uses. A request that timed
    out while being sent counts as waiting for the headers (its deadline is the header phase's)."""
    if phase is Phase.CONNECT:
        return FailureKind.CONNECT_TIMEOUT, f"no connection within {policy.connect_timeout:g}s"
    if phase is Phase.BODY:
        return FailureKind.BODY_TIMEOUT, f"body not complete within {policy.body_timeout:g}s"
    return FailureKind.HEADER_TIMEOUT, f"no response headers within {policy.header_timeout:g}s"


# The other failures both stacks meet, in the words both use: one cause reads alike in either stack's result.
NOT_RESOLVED = (FailureKind.DNS, "name resolution failed")
REFUSED = (FailureKind.REFUSED, "connection refused")
NO_RESPONSE = (FailureKind.RESET, "server closed the connection without a response")
PEER_RESET = (FailureKind.RESET, "connection reset by peer")


def body_cut(cause: object = None) -> tuple[FailureKind, str]:
    """The connection closed before the promised body was complete; `cause`: the stack's own words for it."""
    detail = "connection closed before the promised body was complete"
    return FailureKind.RESET, detail if cause is None else f"{detail} ({cause})"


def tls_error(what: str) -> tuple[FailureKind, str]:
    return FailureKind.TLS, f"TLS error: {what}"


def malformed(what: str) -> tuple[FailureKind, str]:
    return FailureKind.BAD_RESPONSE, f"malformed response: {what}"


def declared_too_large(declared: object, limit: int) -> tuple[FailureKind, str]:
    """A Content-Length over the body limit: the body is refused unread."""
    return FailureKind.TOO_LARGE, f"content-length {declared} > limit {limit}; body not read"


def body_too_large(limit: int) -> tuple[FailureKind, str]:
    return FailureKind.TOO_LARGE, f"body exceeds {limit} bytes (after decompression)"


def unsupported_url(url: str) -> tuple[FailureKind, str]:
    return FailureKind.OTHER, f"unsupported URL: {url!r}"


def host_header(url: str) -> str:
    """The Host header a request for `url` carries: the host (IPv6 in brackets), with the port only when
    it is not the scheme's default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port and parts.port != DEFAULT_PORTS.get(parts.scheme.lower()):
        host = f"{host}:{parts.port}"
    return host


_CA: str | None = None


def ca_bundle() -> str:
    """The CA bundle https is verified against (certifi's, which requests uses too), for every stack."""
    global _CA
    if _CA is None:
        import certifi

        _CA = certifi.where()
    return _CA
