"""A local web of single inputs that each could hold up everything behind them, for the crawl that is left
running unattended (tests/test_unattended.py, tests/test_crawl_deadline.py).

Servers (each on its own loopback IP and an ephemeral port):
  retry   one URL (/busy) answers 503 with Retry-After, every other one (/p0 … /p{PAGES-1}) 200; its home
          page links to /busy first, then to the rest
  heavy   /attributes: one tag of ATTRIBUTES attributes (~1.5 MB), with a link before and after it;
          /quote-attributes: one tag of QUOTE_ATTRIBUTES attributes whose names start with a quote (~3.3 MB,
          which libxml2 keeps as attributes), with a link before and after it;
          /links: LINKS links (to /private/…, which robots.txt disallows: recorded, never requested);
          /after-1, /after-2: plain pages linked from the home page after those two; and, with
          `hanging=N`, links to N names under HANG_SUFFIX, whose lookups never answer (testweb/fakedns)
  slow    /trickle: the status line and headers, then a byte a second for up to TRICKLE_FOR seconds
          (a request that no crawl deadline shorter than that ends by itself)

Every request is logged (`hits`: server, method, path, status) so a test can say which pages were fetched.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import cache
from http.server import ThreadingHTTPServer

from .serving import QuietHandler, links_page

PAGES = 40
ATTRIBUTES = 100_000
QUOTE_ATTRIBUTES = 480_000
LINKS = 50_000
TRICKLE_FOR = 240.0
DISALLOWED = "/private/"
HANG_SUFFIX = ".hang.example"


@dataclass(frozen=True)
class Hit:
    server: str
    method: str
    path: str
    status: int


@cache
def attributes_page() -> bytes:
    attrs = " ".join(f'data-a{i}="x"' for i in range(ATTRIBUTES))
    return (
        f"<!doctype html><html><head><title>attributes</title></head><body><a href='/before-attributes'>b</a>"
        f"<div {attrs}>one tag</div><a href='/after-attributes'>a</a></body></html>"
    ).encode()


@cache
def quote_attributes_page() -> bytes:
    attrs = b" ".join(b'"%d' % i for i in range(QUOTE_ATTRIBUTES))
    return (
        b"<!doctype html><html><head><title>quote attributes</title></head><body>"
        b"<a href='/before-quote-attributes'>b</a><p " + attrs + b">one tag</p>"
        b"<a href='/after-quote-attributes'>a</a></body></html>"
    )


@cache
def disallowed_links_page() -> bytes:
    anchors = "".join(f"<a href='{DISALLOWED}l{i}'>l</a>\n" for i in range(LINKS))
    return f"<!doctype html><html><head><title>links</title></head><body>{anchors}</body></html>".encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, web: UnattendedWeb, name: str, ip: str):
        self.web, self.name = web, name
        super().__init__((ip, 0), _Handler)


class _Handler(QuietHandler):
    server: _Server  # type: ignore[assignment]

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.server.web.log(Hit(self.server.name, self.command, self.path, status))
        self.send_response(status)
        for name, value in {"Content-Type": "text/html; charset=utf-8", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def _answer(self) -> None:
        web, name, path = self.server.web, self.server.name, self.path
        if path == "/robots.txt":
            self._send(200, f"User-agent: *\nDisallow: {DISALLOWED}\n".encode(), {"Content-Type": "text/plain"})
        elif name == "retry" and path == "/":
            self._send(200, links_page("retry", ["/busy", *(f"/p{i}" for i in range(PAGES))]))
        elif name == "retry" and path == "/busy":
            self._send(503, b"busy", {"Retry-After": str(web.retry_after)})
        elif name == "retry" and path.startswith("/p") and path[2:].isdigit() and int(path[2:]) < PAGES:
            self._send(200, links_page(path))
        elif name == "heavy" and path == "/":
            hanging = [f"http://h{i}{HANG_SUFFIX}/" for i in range(web.hanging)]
            pages = ["/attributes", "/quote-attributes", "/links", "/after-1", "/after-2"]
            self._send(200, links_page("heavy", [*pages, *hanging]))
        elif name == "heavy" and path == "/attributes":
            self._send(200, attributes_page())
        elif name == "heavy" and path == "/quote-attributes":
            self._send(200, quote_attributes_page())
        elif name == "heavy" and path == "/links":
            self._send(200, disallowed_links_page())
        elif name == "heavy" and path in (
            "/after-1",
            "/after-2",
            "/before-attributes",
            "/after-attributes",
            "/before-quote-attributes",
            "/after-quote-attributes",
        ):
            self._send(200, links_page(path))
        elif name == "slow" and path == "/":
            self._send(200, links_page("slow", ["/trickle"]))
        elif name == "slow" and path == "/trickle":
            self._trickle()
        else:
            self._send(404, b"not found")

    def _trickle(self) -> None:
        self.server.web.log(Hit(self.server.name, self.command, self.path, 200))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        ends = time.monotonic() + TRICKLE_FOR
        while time.monotonic() < ends and not self.server.web.stopping.is_set():
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return  # the client went away
            time.sleep(1.0)


class UnattendedWeb:
    """`with UnattendedWeb(first=150) as web:` three servers on 127.0.0.<first> … <first+2>."""

    __test__ = False
    names = ("retry", "heavy", "slow")

    def __init__(self, first: int = 150, *, retry_after: int = 3, hanging: int = 0) -> None:
        self.retry_after, self.hanging = retry_after, hanging
        self.ips = {name: f"127.0.0.{first + i}" for i, name in enumerate(self.names)}
        self.hits: list[Hit] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._servers: dict[str, _Server] = {}
        self._threads: list[threading.Thread] = []

    def log(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def start(self) -> UnattendedWeb:
        attributes_page(), quote_attributes_page(), disallowed_links_page()  # built before any crawl's timing
        for name in self.names:
            server = self._servers[name] = _Server(self, name, self.ips[name])
            t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self.stopping.set()
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for t in self._threads:
            t.join(5)

    def __enter__(self) -> UnattendedWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def origin(self, name: str) -> str:
        host, port = self._servers[name].server_address[:2]
        return f"http://{host}:{port}"

    def url(self, name: str, path: str) -> str:
        return self.origin(name) + path

    def port(self, name: str) -> int:
        return self._servers[name].server_address[1]

    def fetched(self, name: str) -> dict[str, list[int]]:
        """Path -> the statuses it was answered with, GETs only."""
        out: dict[str, list[int]] = {}
        with self._lock:
            for hit in self.hits:
                if hit.server == name and hit.method == "GET":
                    out.setdefault(hit.path, []).append(hit.status)
        return out
