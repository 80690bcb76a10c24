"""Many status checks at once on one thread: the check mode of crawler.engine (libcurl's multi interface,
driven on the caller's thread), one fresh connection each.

The monitor's check is a GET whose answer is reduced to a status, a byte count and four timings; the
crawler's ``Fetcher`` (requests/urllib3, one exchange per call, one thread per exchange) costs ~0.8 ms of
Python per check, which caps a 2-core machine well below the monitor's target. Here the HTTP work
(DNS, connect, HTTP/1.1 framing, decoding) runs in C and one Python loop drives hundreds of transfers;
Python only sees a few callbacks per check.

It keeps the ``Fetcher`` guarantees that matter for monitoring, and returns the same ``FetchResult``:

* phase budgets from ``FetchPolicy``: DNS (``dns_timeout``: a host name is looked up first by
  crawler.lookup, on its own deadline, and libcurl dials only the addresses found, CURLOPT_RESOLVE through
  ``Request.addresses``; libcurl's own lookup would be bounded only by CONNECTTIMEOUT and reported as a
  connect timeout), connect (libcurl's CONNECTTIMEOUT), headers (a deadline from
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

Timings (``Timings``): dns = name lookup; connect = TCP (+TLS) after the lookup; tls = the TLS handshake
alone (libcurl's APPCONNECT_TIME less its CONNECT_TIME; None for http); first_byte = request
sent to first response byte; body = first response byte to the end (headers are usually in the same
packet); total = start to end. None where the phase was not reached.

The transfer itself (callbacks, deadlines, classification, timings) is the fetch engine's
(crawler.curl_transfer, crawler.curl_loop, crawler.curl_failures, crawler.curl_result), shared with the
crawler's fetches; what is the monitor's here is the check's shape (fresh connection, certificate, body only
when asked) and the round: every check added at once, the loop driven until they have all ended.

Not thread-safe: one ``MultiChecker`` per thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .curl_loop import Loop
from .curl_transfer import Request
from .http import AddressCheck, FailureKind, FetchPolicy, FetchResult, Timings, ca_bundle
from .lookup import Lookup, Lookups, lookup_name
from .sanitize import clean_line

__all__ = ["CheckRequest", "MultiChecker", "TimedResult"]

_MAX_WAIT_S = 0.05  # longest wait between two looks at the deadlines
_LOOKUP_POLL_S = 0.005  # longest wait while name lookups are out: their threads can't wake the loop


@dataclass(frozen=True)
class CheckRequest:
    url: str
    address_check: AddressCheck | None = None  # None: any address may be dialled
    keep_body: bool = False  # keep this check's body (a content check reads it) whatever the checker's default
    keep_first_bytes: int = 0  # otherwise keep at most this many first bytes (evidence of a failing answer)


class TimedResult(NamedTuple):
    started_at: float  # wall clock (time.time()) when the transfer was started
    result: FetchResult


class MultiChecker:
    """GETs many URLs concurrently under a FetchPolicy; see the module docstring for the contract."""

    def __init__(self, policy: FetchPolicy, *, max_parallel: int = 256, keep_body: bool = False) -> None:
        self.policy = policy
        self.max_parallel = max(1, max_parallel)
        self.keep_body = keep_body
        self._loop = Loop(max_connections=1)  # no connection is kept: every check opens its own

    def close(self) -> None:
        self._loop.close()

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
        waiting = list(reversed(range(len(requests))))
        loop = self._loop
        lookups = Lookups(self.policy.dns_timeout)
        ca = ca_bundle()

        def begin(index: int, found: Lookup | None) -> None:
            check = requests[index]
            request = Request(
                check.url,
                address_check=check.address_check,
                keep_body=self.keep_body or check.keep_body,
                keep_first_bytes=check.keep_first_bytes,
                reuse=False,
                certificate=True,
                ca_bundle=ca,
                addresses=found.addresses if found is not None else (),
            )
            loop.start(request, self.policy, _into(results, index, found))

        try:
            while waiting or loop.active or lookups:
                while waiting and len(loop.active) + len(lookups) < self.max_parallel:
                    index = waiting.pop()
                    name = lookup_name(requests[index].url)
                    if name is None:  # an IP literal (or a URL libcurl itself refuses): nothing to look up
                        begin(index, None)
                    else:
                        lookups.start(index, *name)
                for index, found in lookups.ended():
                    if found.addresses:
                        begin(index, found)
                    else:
                        results[index] = _lookup_failed(requests[index].url, found)
                if loop.active:
                    loop.step(_LOOKUP_POLL_S if lookups else _MAX_WAIT_S)
                elif lookups:
                    deadline = lookups.next_deadline()
                    now = time.monotonic()
                    lookups.wait(min(_MAX_WAIT_S, max(0.0, deadline - now) if deadline is not None else _MAX_WAIT_S))
        finally:
            # Only on an exception from outside (e.g. the task's time limit): leave no transfer attached
            # to the multi handle, or the next call would read messages about handles it doesn't know.
            for t in list(loop.active.values()):
                loop.abort(t, FailureKind.OTHER, "check abandoned")
        return results  # type: ignore[return-value]


def _into(results: list[TimedResult | None], index: int, found: Lookup | None):
    def done(result: FetchResult, started_wall: float) -> None:
        if found is not None:
            # The check began with its own lookup, before libcurl's clock started: dns is that lookup, and
            # the total includes it.
            started_wall = found.started_wall
            result.timings.dns_ms = found.ms
            result.timings.total_ms += found.ms
        results[index] = TimedResult(started_wall, result)

    return done


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
