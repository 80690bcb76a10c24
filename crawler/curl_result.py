"""What an ended libcurl transfer yields: its ``FetchResult``, built from what the callbacks saw and what
libcurl measured.

The status and headers count only once the final response's head has ended (or when its declared length
was refused); the timings come from libcurl's own clock, split into the same phases as the Fetcher's (a
kept-alive connection has no connect phase); the request head is rebuilt as libcurl sends it, for the
archive.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pycurl

from .certs import certificate_from_curl
from .curl_failures import _classify
from .curl_transfer import _ACCEPT_ENCODING, _info, _Transfer
from .http import FailureKind, FetchResult, Timings, host_header
from .sanitize import clean_head, clean_headers, clean_line


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
