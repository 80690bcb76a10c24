"""What a requests/urllib3/socket exception means: the ``FailureKind`` and words of a Fetcher exchange that
did not end with a complete response.

The real cause is nested (requests wraps urllib3, which wraps the socket's error), so the whole chain is
searched, the most telling cause first; the phase the exchange was in tells which deadline a timeout was.
The words are those the fetch engine uses for the same cause (``crawler.http``), so a result reads alike
whichever stack made it. ``_Failure`` carries a classified failure out of the Fetcher's phases.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Iterator

import requests
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    IncompleteRead,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from .fetch_hooks import _HeaderTooLarge
from .http import (
    NO_RESPONSE,
    NOT_RESOLVED,
    PEER_RESET,
    REFUSED,
    FailureKind,
    FetchPolicy,
    Phase,
    body_cut,
    malformed,
    timed_out,
    tls_error,
)


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
        return NOT_RESOLVED
    if has(ConnectionRefusedError):
        return REFUSED
    # urllib3's NewConnectionError subclasses ConnectTimeoutError although it is any connect failure.
    if any(isinstance(c, ConnectTimeoutError) and not isinstance(c, NewConnectionError) for c in causes):
        return timed_out(Phase.CONNECT, policy)
    if found := has(ssl.SSLError, ssl.CertificateError, requests.exceptions.SSLError):
        return tls_error(_short(found))
    if has(ReadTimeoutError, socket.timeout, requests.exceptions.Timeout):
        return timed_out(phase, policy)
    if found := has(IncompleteRead, http.client.IncompleteRead):
        return body_cut(found)
    if has(http.client.RemoteDisconnected):
        return NO_RESPONSE
    if has(ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
        return PEER_RESET
    if found := has(DecodeError, requests.exceptions.ContentDecodingError):
        return FailureKind.BAD_RESPONSE, f"cannot decode body: {_short(found)}"
    if found := has(http.client.HTTPException):
        return malformed(_short(found))
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
