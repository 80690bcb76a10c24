"""Servers the monitoring tests need besides the local test web: one that answers 500, one that flaps
on command, and an address that refuses connections. Loopback only; stopped by the context manager."""

from __future__ import annotations

import socket
import threading
import time
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
        self.connections = 0  # every connection accepted, whether or not it sent a request
        self._lock = threading.Lock()

    def get_request(self):
        request = super().get_request()
        with self._lock:
            self.connections += 1
        return request

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


class FailingFirst:
    """A server on loopback whose first `k` connections fail (k=None: every one), then answers 200 (MONITOR_RETRIES).

    `how` says how a connection fails: "drop" reads the request and closes without a word (libcurl: empty
    reply, a disconnect), "stall" reads it and says nothing until the client gives up (a header timeout, a
    disconnect), "slow" answers 200 after `slow_s` seconds (a delay). `connections` counts what it accepted,
    `accepted_at` says when.
    """

    def __init__(self, host: str, k: int | None, how: str = "drop", slow_s: float = 0.5) -> None:
        if how not in ("drop", "stall", "slow"):
            raise ValueError(how)
        self.k, self.how, self.slow_s = k, how, slow_s
        self.connections = 0
        self.accepted_at: list[float] = []  # time.monotonic() of each accepted connection
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, 0), backlog=128)
        self._listener.settimeout(0.05)  # lets the accept loop notice stop()
        self.host, self.port = host, self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self.accepted_at.append(time.monotonic())
                failing = self.k is None or self.connections <= self.k
            threading.Thread(target=self._serve, args=(conn, failing), daemon=True).start()

    def _serve(self, conn: socket.socket, failing: bool) -> None:
        try:
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            if failing and self.how == "drop":
                return
            if failing and self.how == "stall":
                self.stopping.wait(30)  # bounded: the client's header timeout ends it first
                return
            if failing:
                self.stopping.wait(self.slow_s)
            body = b"ok\n"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopping.set()
        self._listener.close()
        self._thread.join(2)


@contextmanager
def failing_first(host: str, k: int | None, how: str = "drop", slow_s: float = 0.5) -> Iterator[FailingFirst]:
    server = FailingFirst(host, k, how, slow_s)
    try:
        yield server
    finally:
        server.stop()
