"""Serving a small test web on loopback from a thread of its own: one way for every web here to start and
stop its ThreadingHTTPServer, and to be used as a context manager."""

from __future__ import annotations

import threading
from collections.abc import Callable
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


class QuietHandler(BaseHTTPRequestHandler):
    """A test web's handler: HTTP/1.0, no log line a request, GET and HEAD both answered by `_answer`."""

    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def _answer(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError


def links_page(title: str, links=()) -> bytes:
    """A page of nothing but a title and these links, each its own text."""
    anchors = "".join(f"<a href='{h}'>{h}</a>\n" for h in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body>{anchors}</body></html>".encode()


def answer_handler(answer: Callable[[str], tuple[int, str, bytes]]) -> type[QuietHandler]:
    """A handler that answers each request path with `answer(path)`'s (status, content type, body)."""

    class Handler(QuietHandler):
        def _answer(self) -> None:
            status, ctype, body = answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler

