"""Servers the monitoring tests need besides the local test web: one that answers 500, one that flaps
on command, and an address that refuses connections. Loopback only; stopped by the context manager."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        status = self.server.next_status()
        body = f"status {status}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ScriptedServer(ThreadingHTTPServer):
    """Answers every GET with the next status of `script` (cycling); `script=[500]` always errors."""

    daemon_threads = True

    def __init__(self, host: str, script: list[int]) -> None:
        super().__init__((host, 0), _Handler)
        self.script = list(script)
        self.served = 0
        self._lock = threading.Lock()

    def next_status(self) -> int:
        with self._lock:
            status = self.script[self.served % len(self.script)]
            self.served += 1
            return status

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


@contextmanager
def scripted(host: str, script: list[int]) -> Iterator[ScriptedServer]:
    server = ScriptedServer(host, script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def refusing_url(host: str) -> str:
    """A URL on which nothing listens: bind a port, then close it (nobody else binds loopback aliases)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://{host}:{port}/"
