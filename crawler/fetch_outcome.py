"""What one fetch by the thread-per-exchange Fetcher gathers as its phases run (the lookup's time, the
exchange's hooks, the status, headers and body) and the ``FetchResult`` it ends as, failed or not.

Apart from the Fetcher because the name lookup (``crawler.resolve``) fills one too: a lookup that leaves
nothing to dial ends as a failed result with its time, for either stack.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .fetch_hooks import _Exchange
from .http import FailureKind, FetchResult, Timings
from .sanitize import clean_line


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
