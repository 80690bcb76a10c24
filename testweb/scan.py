"""A tiny loopback web server whose answers a scan test sets page by page: validators or none, HEAD
refused, any status and headers. (testweb always answers HEAD and sends every validator.)"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Resource:
    body: bytes = b"<html><head><title>t</title></head><body>version 1</body></html>"
    status: int = 200
    etag: str = ""
    last_modified: str = ""
    content_length: bool = True  # send Content-Length (responses close the connection either way)
    head_status: int | None = None  # answer HEAD with this status instead (405: HEAD refused)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hit:
    method: str
    path: str
    headers: dict[str, str]
    status: int


class _Handler(BaseHTTPRequestHandler):
    server: ScanWeb  # type: ignore[assignment]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def _answer(self) -> None:
        web = self.server
        res = web.pages.get(self.path)
        if res is None:
            status, headers, body = 404, {}, b"not found"
        elif self.command == "HEAD" and res.head_status is not None:
            status, headers, body = res.head_status, {"Allow": "GET"}, b""
        else:
            status, headers, body = self._resource(res)
        web.hits.append(Hit(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, status))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command == "GET" and body:
            self.wfile.write(body)

    def _resource(self, res: Resource) -> tuple[int, dict[str, str], bytes]:
        headers = dict(res.headers)
        if res.etag:
            headers["ETag"] = res.etag
        if res.last_modified:
            headers["Last-Modified"] = res.last_modified
        if res.status == 200 and self.command == "GET" and self._not_modified(res):
            return 304, headers, b""
        if res.content_length:
            headers["Content-Length"] = str(len(res.body))
        headers.setdefault("Content-Type", "text/html")
        return res.status, headers, res.body

    def _not_modified(self, res: Resource) -> bool:
        if "If-None-Match" in self.headers:  # it wins over If-Modified-Since (RFC 9110 13.2.2)
            return self.headers["If-None-Match"] == res.etag
        return bool(res.last_modified) and self.headers.get("If-Modified-Since") == res.last_modified


class ScanWeb(ThreadingHTTPServer):
    """`ScanWeb("127.0.0.77")` serves `pages` (path -> Resource) on a free port; `hits` logs requests.
    HTTP/1.0: every response closes its connection, so bodies need no Content-Length."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.77"):
        super().__init__((host, 0), _Handler)
        robots = Resource(b"User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"})
        self.pages: dict[str, Resource] = {"/robots.txt": robots}
        self.hits: list[Hit] = []
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}{path}"

    def requests(self, path: str) -> list[tuple[str, int]]:
        return [(h.method, h.status) for h in self.hits if h.path == path]

    def __enter__(self) -> ScanWeb:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(5)
