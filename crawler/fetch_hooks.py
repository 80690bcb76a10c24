"""The Fetcher's hooks inside urllib3 and http.client: the connection pinned to the addresses the Fetcher
resolved and checked, and the response whose every ``recv`` is bounded by the phase's absolute deadline.

They are small subclasses (connection, pool, adapter, response) because urllib3 offers no other way in:
requests' own timeouts are per read, and its own connect would resolve the name again. What an exchange
saw on its way (phase, deadline, connect time, first byte, peer) is kept on its ``_Exchange`` for the
Fetcher's result and its failure's classification.
"""

from __future__ import annotations

import contextvars
import http.client
import io
import socket
import time
from dataclasses import dataclass

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import create_connection

from .http import Phase

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
