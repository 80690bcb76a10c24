"""A page that answers well and then badly, for the incident evidence tests: 200 with an HTML page until
`fail(status, body)` is called, then that status and body (text/plain), each with its own Server header and a
session cookie whose value must never be shown. Every other path is a 404. Loopback only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TurningPage

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        page = self.server
        if self.path != "/":
            status, body, ctype, name = 404, b"not here\n", "text/plain", "good/1.0"
        elif page.failing is None:
            status, body, ctype, name = 200, page.good_body, "text/html; charset=utf-8", "good/1.0"
        else:
            status, body = page.failing
            ctype, name = "text/plain; charset=utf-8", "broken/2.0"
        self.server_name_sent = name
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Set-Cookie", f"session={page.cookie}; Path=/; HttpOnly")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def version_string(self) -> str:  # what send_response says in its Server header
        return getattr(self, "server_name_sent", "testweb")


class TurningPage(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, good_body: bytes, cookie: str) -> None:
        super().__init__((host, 0), _Handler)
        self.good_body = good_body
        self.cookie = cookie
        self.failing: tuple[int, bytes] | None = None

    @property
    def origin(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def fail(self, status: int, body: bytes) -> None:
        self.failing = (status, body)


@contextmanager
def turning_page(host: str, good_body: bytes, cookie: str) -> Iterator[TurningPage]:
    server = TurningPage(host, good_body, cookie)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
