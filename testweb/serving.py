"""Serving a small test web on loopback from a thread of its own: one way for every web here to start and
stop its ThreadingHTTPServer, and to be used as a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_in_thread(
    host: str, port: int, handler: type[BaseHTTPRequestHandler], *, poll_interval: float = 0.5
) -> ThreadingHTTPServer:
    """A server on (host, port) (port 0: a free one), answering on a daemon thread; stop it with server_stop."""
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True).start()
    return server


def server_stop(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


class ServedWeb:
    """`with web:` starts it and stops it; subclasses define start() (returning self) and stop()."""

    def start(self):  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
