"""A userspace delay proxy: wide-area latency on loopback without netem.

``DelayProxy`` is an asyncio TCP proxy on 127.0.0.0/8 that holds every chunk for half the round trip in
each direction (so a request and its answer cost one round trip) and makes a new connection wait one round
trip before it reaches the server (TCP's handshake). The client's own connect returns at once (the kernel
accepts for the proxy), so that handshake's round trip falls in the client's wait for the response headers:
a header timeout must allow two round trips. Order within a connection is kept; bandwidth is not limited.
One event loop on one thread serves every listener. ``bench.harness.latency`` says when it is needed (no
sch_netem) and the benchmarks put it in front of their webs.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["DelayProxy"]

_CHUNK = 65536
_DEADLINE = 10.0  # seconds any call into the proxy's loop may take


class DelayProxy:
    """TCP listeners on loopback addresses, each forwarding to an upstream with `rtt_ms` added per round trip."""

    def __init__(self, rtt_ms: float) -> None:
        if rtt_ms < 0:
            raise ValueError("rtt_ms must be >= 0")
        self.rtt = rtt_ms / 1000
        self._loop = asyncio.new_event_loop()
        self._servers: dict[tuple[str, int], asyncio.Server] = {}
        self._conns: dict[tuple[str, int], set[asyncio.StreamWriter]] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="delay-proxy", daemon=True)
        self._thread.start()

    def _call(self, coro):  # noqa: ANN001, ANN202
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(_DEADLINE)

    def add(self, listen: tuple[str, int], upstream: tuple[str, int]) -> int:
        """Listen on `listen` (port 0: any) and forward to `upstream`; returns the port bound (OSError if taken)."""
        return self._call(self._add(listen, upstream))

    def remove(self, host: str, port: int) -> None:
        """Stop listening on (host, port) and cut its connections (a host that went down)."""
        self._call(self._remove((host, port)))

    def close(self) -> None:
        for key in list(self._servers):
            self.remove(*key)
        self._call(self._cancel_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_DEADLINE)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _add(self, listen: tuple[str, int], upstream: tuple[str, int]) -> int:
        conns: set[asyncio.StreamWriter] = set()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conns.add(writer)
            try:
                await self._relay(reader, writer, upstream)
            except asyncio.CancelledError:
                writer.transport.abort()  # the proxy closing: streams' callback must not see a cancelled task
            finally:
                conns.discard(writer)

        server = await asyncio.start_server(handle, listen[0], listen[1], reuse_address=True)
        port = server.sockets[0].getsockname()[1]
        self._servers[(listen[0], port)] = server
        self._conns[(listen[0], port)] = conns
        return port

    async def _cancel_all(self) -> None:
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _remove(self, key: tuple[str, int]) -> None:
        server = self._servers.pop(key, None)
        if server is not None:
            server.close()
        for writer in self._conns.pop(key, set()):
            writer.transport.abort()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream) -> None:  # noqa: ANN001
        await asyncio.sleep(self.rtt)  # the handshake's round trip, before the first byte can reach the server
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*upstream), _DEADLINE)
        except (OSError, TimeoutError):
            writer.transport.abort()  # the server is not there: as a refused connection
            return
        half = self.rtt / 2
        try:
            await asyncio.gather(self._pipe(reader, up_writer, half), self._pipe(up_reader, writer, half))
        finally:
            for w in (writer, up_writer):
                w.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
        """Copy one direction, each chunk held `delay` seconds after it arrived; order kept."""
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def pump() -> None:
            while True:  # ends at EOF or when the connection is cut
                try:
                    data = await reader.read(_CHUNK)
                except (OSError, ConnectionError):
                    data = b""
                await held.put((loop.time() + delay, data))
                if not data:
                    return

        reading = asyncio.create_task(pump())
        try:
            while True:  # ends at the EOF pump() puts
                due, data = await held.get()
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (OSError, ConnectionError):
            return
        finally:
            reading.cancel()
