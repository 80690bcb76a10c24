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

The parts: a transfer's request, set-up and callbacks (``crawler.curl_transfer``), the loop driving
transfers (``crawler.curl_loop``), what an ended transfer yields (``crawler.curl_result``, its failure's
kind and words from ``crawler.curl_failures``); here the engine thread and ``EngineFetcher``.

Name resolution: with ``Request.addresses`` the caller has resolved the name itself (``EngineFetcher``:
bounded by ``dns_timeout`` and filtered by the guard, as the ``Fetcher`` does) and libcurl dials only
those (CURLOPT_RESOLVE); without, libcurl resolves (threaded resolver) within the connect budget.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import os
import socket
import threading
import time

from .curl_loop import Loop
from .curl_transfer import _BACKSTOP_S, Request, _Transfer
from .http import AddressCheck, FailureKind, FetchPolicy, FetchResult
from .resolve import resolve_checked

__all__ = ["Engine", "EngineFetcher", "shared_engine"]

log = logging.getLogger(__name__)


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
