"""What a libcurl error code means: the ``FailureKind`` and words of a transfer that did not end with a
complete response.

A callback that aborted the transfer already said why (``flag``: a forbidden address, a limit); otherwise
the code libcurl ended it with, read with what the callbacks saw (was the request sent, had the headers
ended), is put in the words the thread-per-exchange Fetcher uses for the same cause (``crawler.http``), so
a result reads alike whichever stack made it.
"""

from __future__ import annotations

import errno

import pycurl

from .curl_transfer import _info, _Transfer
from .http import (
    NO_RESPONSE,
    NOT_RESOLVED,
    PEER_RESET,
    REFUSED,
    FailureKind,
    FetchResult,
    Phase,
    body_cut,
    declared_too_large,
    malformed,
    timed_out,
    tls_error,
    unsupported_url,
)
from .sanitize import clean_headers

__all__ = ["refused_nul_header"]


def _classify(easy: pycurl.Curl, t: _Transfer, code: int, message: str) -> tuple[FailureKind, str]:
    if t.flag is not None:
        return t.flag
    policy = t.policy
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        return NOT_RESOLVED
    if code == pycurl.E_COULDNT_CONNECT:
        if t.forbidden is not None:
            return FailureKind.FORBIDDEN_ADDRESS, t.forbidden[:200]
        if _info(easy, pycurl.OS_ERRNO) == errno.ECONNREFUSED:
            return REFUSED
        return FailureKind.OTHER, _short(code, message)
    if code == pycurl.E_OPERATION_TIMEDOUT:  # libcurl's connect timeout, or the backstop
        if t.connected_at is None:
            return timed_out(Phase.CONNECT, policy)
        return timed_out(Phase.HEADERS if t.headers_done_at is None else Phase.BODY, policy)
    if code == pycurl.E_FILESIZE_EXCEEDED:
        declared = clean_headers(t.head).get("content-length", "?")
        return declared_too_large(declared, policy.max_body_bytes)
    if code in _TLS_CODES:
        return tls_error(_short(code, message))
    if code == pycurl.E_GOT_NOTHING:
        return NO_RESPONSE
    if code == pycurl.E_PARTIAL_FILE:
        return body_cut()
    if code in (pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR):
        return PEER_RESET
    if code in _BAD_RESPONSE_CODES:
        return malformed(_short(code, message))
    if code in (pycurl.E_UNSUPPORTED_PROTOCOL, pycurl.E_URL_MALFORMAT):
        if t.connected_at is not None:  # libcurl says this of an answer in no HTTP version it knows
            return malformed(_short(code, message))
        return unsupported_url(t.request.url[:200])
    return FailureKind.OTHER, _short(code, message)


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


def _short(code: int, message: str) -> str:
    return f"curl error {code}: {' '.join(message.split())[:200]}"
