"""A local web of small sites, two of which flap, for the host-health tests and benchmark
(tests/test_health_web.py, bench/health.py).

Each server has its own loopback address (127.0.<n>.1, one ephemeral port each) and PAGES pages: the home
page links to /p1 … /p{PAGES-1}, each of which links back home; robots.txt allows everything; /health is
what its monitor checks (so the access log tells the monitor's requests from the crawl's). Two servers may
misbehave:

  unavailable   answers every request 503, no Retry-After, for its first `unavailable_for` seconds (from
                start()), then like any other
  limited       answers every `limit_every`-th crawl request (not /health) 429, no Retry-After

Every request is logged with its wall-clock time (time.time(), comparable with the database's times):
`hits` (server, time, method, path, status).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import ThreadingHTTPServer

from .serving import QuietHandler, links_page

PAGES = 12
HEALTH = "/health"
UNAVAILABLE, LIMITED = "unavailable", "limited"


@dataclass(frozen=True)
class Hit:
    server: str
    at: float
    method: str
    path: str
    status: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, web: FlappingWeb, name: str, ip: str):
        self.web, self.name = web, name
        self.crawl_requests = 0
        super().__init__((ip, 0), _Handler)


class _Handler(QuietHandler):
    server: _Server  # type: ignore[assignment]

    def _answer(self) -> None:
        web, name = self.server.web, self.server.name
        path = self.path.split("?", 1)[0]
        status, body, ctype = self._choose(web, name, path)
        web.log(Hit(name, time.time(), self.command, path, status))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _choose(self, web: FlappingWeb, name: str, path: str) -> tuple[int, bytes, str]:
        if name == web.unavailable and time.monotonic() < web.started + web.unavailable_for:
            return 503, b"<p>unavailable</p>", "text/html"
        if name == web.limited and path != HEALTH:
            with web.lock:
                self.server.crawl_requests += 1
                n = self.server.crawl_requests
            if n % web.limit_every == 0:
                return 429, b"<p>slow down</p>", "text/html"
        if path == "/robots.txt":
            return 200, b"User-agent: *\nAllow: /\n", "text/plain"
        if path == HEALTH:
            return 200, b"ok", "text/plain"
        if path == "/":
            return 200, links_page(f"{name} home", [f"/p{i}" for i in range(1, web.pages)]), "text/html"
        if path.startswith("/p") and path[2:].isdigit() and 0 < int(path[2:]) < web.pages:
            return 200, links_page(f"{name} {path}", ["/"]), "text/html"
        return 404, b"<p>no such page</p>", "text/html"


class FlappingWeb:
    """`servers` sites named s0 … s{n-1}; `unavailable` and `limited` name the flapping ones (or None)."""

    def __init__(
        self,
        servers: int = 20,
        *,
        pages: int = PAGES,
        unavailable: str | None = "s0",
        unavailable_for: float = 60.0,
        limited: str | None = "s1",
        limit_every: int = 3,
        base_ip: int = 40,
    ) -> None:
        self.pages, self.unavailable, self.unavailable_for = pages, unavailable, unavailable_for
        self.limited, self.limit_every = limited, limit_every
        self.names = [f"s{i}" for i in range(servers)]
        self.ips = {name: f"127.{base_ip + i // 200}.{i % 200 + 1}.1" for i, name in enumerate(self.names)}
        self.hits: list[Hit] = []
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self._servers: dict[str, _Server] = {}
        self._threads: list[threading.Thread] = []

    def start(self) -> FlappingWeb:
        for name in self.names:
            server = _Server(self, name, self.ips[name])
            self._servers[name] = server
            t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
            t.start()
            self._threads.append(t)
        self.started = time.monotonic()
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for t in self._threads:
            t.join(5)

    def __enter__(self) -> FlappingWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, hit: Hit) -> None:
        with self.lock:
            self.hits.append(hit)

    def port(self, name: str) -> int:
        return self._servers[name].server_address[1]

    def origin(self, name: str) -> str:
        return f"http://{self.ips[name]}:{self.port(name)}"

    def seeds(self) -> list[str]:
        return [f"{self.origin(n)}/" for n in self.names]

    def page_paths(self) -> set[str]:
        return {"/", *(f"/p{i}" for i in range(1, self.pages))}

    def crawl_hits(self, name: str) -> list[Hit]:
        """The crawl's requests to a server (the monitor's are to /health), in order."""
        with self.lock:
            return [h for h in self.hits if h.server == name and h.path != HEALTH]

    def fetched(self, name: str) -> set[str]:
        """The pages of a server answered 200 at least once."""
        return {h.path for h in self.crawl_hits(name) if h.status == 200 and h.path in self.page_paths()}
