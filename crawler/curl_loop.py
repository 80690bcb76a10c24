"""The loop that drives the fetch engine's transfers: a libcurl multi handle, the selector its sockets
are waited on, libcurl's timer, and the heap of header and body deadlines.

One thread calls it: the monitor's ``crawler.multicheck`` steps it on its own thread, ``crawler.engine``'s
``Engine`` on a thread of its own for callers on many. Each step waits for the earliest of a socket event,
libcurl's timer and the next deadline, lets libcurl act, hands every ended transfer its result once, and
aborts those past their deadline. An ended transfer's easy handle is reset and kept for the next one.
"""

from __future__ import annotations

import heapq
import selectors
import time
from collections.abc import Callable

import pycurl

from .curl_result import _result
from .curl_transfer import Done, Request, _configure, _Transfer
from .http import FailureKind, FetchPolicy, Phase, timed_out

__all__ = ["Loop"]

_MAX_WAIT_S = 0.5  # longest selector wait when nothing is due (a submit wakes the engine at once)


class Loop:
    """A libcurl multi handle and the Python loop that drives it: socket events through a selector,
    libcurl's timer, and the header and body deadlines. Not thread-safe: one thread calls start(),
    step(), abort() and close()."""

    def __init__(self, *, max_connections: int = 256) -> None:
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
        self.multi.setopt(pycurl.M_MAXCONNECTS, max(1, max_connections))
        self.selector = selectors.DefaultSelector()
        self.active: dict[pycurl.Curl, _Transfer] = {}
        self._heap: list[tuple[float, int, _Transfer]] = []
        self._seq = 0
        self._idle: list[pycurl.Curl] = []
        self._timer_at: float | None = None  # when libcurl wants socket_action(SOCKET_TIMEOUT)
        self._extra: dict[int, Callable[[], None]] = {}  # fds of the loop's owner (a wake-up socket)

    def close(self) -> None:
        for easy in list(self.active):
            self.abort(self.active[easy], FailureKind.OTHER, "the engine was closed")
        for easy in self._idle:
            easy.close()
        self._idle = []
        self.multi.close()
        self.selector.close()

    def watch(self, fd: int, on_readable: Callable[[], None]) -> None:
        """Also wait for `fd` to be readable (the Engine's wake-up socket)."""
        self._extra[fd] = on_readable
        self.selector.register(fd, selectors.EVENT_READ)

    # -- libcurl's socket and timer callbacks -------------------------------------------------------

    def _on_socket(self, what: int, fd: int, multi: object, socketp: object) -> None:
        if what == pycurl.POLL_REMOVE:
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass
            return
        events = 0
        if what in (pycurl.POLL_IN, pycurl.POLL_INOUT):
            events |= selectors.EVENT_READ
        if what in (pycurl.POLL_OUT, pycurl.POLL_INOUT):
            events |= selectors.EVENT_WRITE
        try:
            self.selector.modify(fd, events)
        except KeyError:
            self.selector.register(fd, events)

    def _on_timer(self, timeout_ms: int) -> None:
        self._timer_at = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000

    # -- transfers ----------------------------------------------------------------------------------

    def arm(self, t: _Transfer, deadline: float) -> None:
        t.deadline = deadline
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, t))

    def start(self, request: Request, policy: FetchPolicy, done: Done) -> _Transfer | None:
        """Set a transfer up and add it; `done(result, started_wall)` is called once when it ends. None when
        it ended at once (a URL libcurl refuses)."""
        easy = self._idle.pop() if self._idle else pycurl.Curl()
        t = _Transfer(request, policy, self, easy, done)
        t.started = time.monotonic()
        t.started_wall = time.time()
        if (request.keep_body or request.keep_first_bytes > 0) and request.method != "HEAD":
            t.body = bytearray()
        try:
            _configure(easy, t)
            self.multi.add_handle(easy)
        except (pycurl.error, UnicodeError, TypeError, ValueError) as exc:  # e.g. a non-ASCII URL
            t.flag = (FailureKind.OTHER, f"invalid URL: {type(exc).__name__}: {str(exc)[:200]}")
            self._finish(t, -1, "", added=False)
            return None
        self.active[easy] = t
        return t

    def abort(self, t: _Transfer, kind: FailureKind, detail: str) -> None:
        if self.active.get(t.easy) is t:
            t.flag = (kind, detail)
            del self.active[t.easy]
            self._finish(t, pycurl.E_ABORTED_BY_CALLBACK, "")

    def step(self, max_wait: float = _MAX_WAIT_S) -> None:
        """Wait for socket events (at most `max_wait`, less when a deadline or libcurl's timer is due),
        let libcurl act on them, collect the transfers that ended, abort those past their deadline."""
        now = time.monotonic()
        wait = max_wait
        if self._timer_at is not None:
            wait = min(wait, self._timer_at - now)
        if self._heap:
            wait = min(wait, self._heap[0][0] - now)
        multi = self.multi
        for key, mask in self.selector.select(max(0.0, wait)):
            fd = key.fd
            extra = self._extra.get(fd)
            if extra is not None:
                extra()
                continue
            action = (pycurl.CSELECT_IN if mask & selectors.EVENT_READ else 0) | (
                pycurl.CSELECT_OUT if mask & selectors.EVENT_WRITE else 0
            )
            multi.socket_action(fd, action)
        if self._timer_at is not None and self._timer_at <= time.monotonic():
            self._timer_at = None
            multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
        self._collect()
        self._expire()

    def _collect(self) -> None:
        while True:
            queued, ok, failed = self.multi.info_read()
            for easy in ok:
                self._finish(self.active.pop(easy), None, "")
            for easy, code, message in failed:
                self._finish(self.active.pop(easy), code, message)
            if not queued:
                break

    def _expire(self) -> None:
        now = time.monotonic()
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, _, t = heapq.heappop(heap)
            # Stale entries: a later phase re-armed the transfer, or it ended (and its easy handle may
            # already carry another transfer: compare the transfer, not the handle).
            if t.deadline != deadline or self.active.get(t.easy) is not t:
                continue
            self.abort(t, *timed_out(Phase.HEADERS if t.headers_done_at is None else Phase.BODY, t.policy))

    def _finish(self, t: _Transfer, code: int | None, message: str, *, added: bool = True) -> None:
        easy = t.easy
        ended = time.monotonic()
        if added:
            self.multi.remove_handle(easy)  # for a transfer still running: aborts it, drops its connection
        try:
            result = _result(t, code, message, ended)
        finally:
            easy.reset()
            self._idle.append(easy)
            # The deadline heap still holds the transfer until its deadline passes (seconds away): it must not
            # hold the body and head too, or a busy engine keeps every page of the last CRAWL_BODY_TIMEOUT.
            t.body, t.head, t.headers = None, [], None
            if len(self._heap) > 64 + 4 * len(self.active):
                self._prune()
        t.done(result, t.started_wall)

    def _prune(self) -> None:
        """Drop the heap's stale entries (transfers that ended or moved to a later deadline)."""
        active = self.active
        self._heap = [e for e in self._heap if e[2].deadline == e[0] and active.get(e[2].easy) is e[2]]
        heapq.heapify(self._heap)
