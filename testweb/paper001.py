"""Seed 001's web, in miniature: sites whose pages change, sites that go down for a while, dead sites.

The paper (§IV.2.2) crawled 10 university sites for 6 h. Its "dead links" came from hosts down for a
while, unstable networks and inactive sites (§I), and its active scan re-loaded pages that changed. It
gives no figures for that mix, so this web sets it by parameters, all on loopback:

- ``sites`` live sites (the seeds) on 127.0.0.<first_octet + i>, each a home page and ``pages`` pages
  ``/p/<k>.html`` linked in a chain (every page is reachable) and at random, a few links leading off-site;
- ``changing_share`` of the pages change every ``change_hours`` paper-hours (each from its own phase):
  new body, ETag, Last-Modified and Content-Length, so a HEAD sees the change;
- the first ``flaky`` sites are *down for a while* during their window of paper-hours
  (``down_windows``): their address stops accepting connections, as a host that is down does;
- ``dead`` more servers never answer at all; the live sites link to them like to any other site.

Every answer takes ``latency`` seconds (a page load over a 2002 network, scaled like the timeouts).
With ``rtt_ms``, every live site is reached through a delay proxy (``testweb.delayproxy``)
that adds that round trip to each exchange and a connection's handshake: the sites serve on a port of
their own and the proxy listens on the port the URLs name; a site that goes down loses its proxy listener
too, so a client still meets a silent address.
A silent address holds a socket with ``listen(0)`` whose single queue slot is taken by ourselves, so the
kernel drops every SYN and a client waits out its *connect* timeout (seed 001: "Socket() … 180 s").

The clock (paper-hour 0) starts at the first request, so the robot's start-up is not web time.

    with MixWeb(MixSpec(hour=10.0)) as web:
        crawl(web.seeds())
"""

from __future__ import annotations

import errno
import hashlib
import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_EPOCH = 1_000_000_000  # Last-Modified of version 0 (2001-09-09), plus the version in hours
_BIND_ATTEMPTS = 8
_TOGGLE_EVERY = 0.02  # seconds between checks of the down windows


@dataclass(frozen=True)
class MixSpec:
    sites: int = 10  # live sites, the seeds (the paper: 10 university sites)
    pages: int = 200  # /p/<k>.html per live site, besides the home page
    links: int = 8  # links per page
    offsite_share: float = 0.1  # share of a page's links that lead to another server (live, flaky or dead)
    dead: int = 3  # servers that never answer, reached only through links
    dead_pages: int = 40  # distinct paths linked on each dead server
    flaky: int = 2  # the first `flaky` live sites are down during their window
    down_windows: tuple[tuple[float, float], ...] = ((1.0, 2.5), (3.0, 4.5))  # paper-hours, per flaky site
    changing_share: float = 0.25  # share of pages that change
    change_hours: float = 1.0  # a changing page changes every this many paper-hours
    hour: float = 10.0  # seconds of our clock per paper-hour
    latency: float = 0.1  # seconds before each answer
    first_octet: int = 60
    seed: int = 1

    def __post_init__(self) -> None:
        if self.sites < 1 or self.pages < 1 or self.links < 1:
            raise ValueError("need at least one site, page and link")
        if not 0 <= self.flaky <= self.sites or len(self.down_windows) < self.flaky:
            raise ValueError("every flaky site needs a down window")
        if self.first_octet < 1 or self.first_octet + self.sites + self.dead > 254:
            raise ValueError("servers must fit in 127.0.0.1 .. 127.0.0.254")
        if self.hour <= 0 or self.change_hours <= 0:
            raise ValueError("hour and change_hours must be positive")

    def host(self, i: int) -> str:
        return f"127.0.0.{self.first_octet + i}"

    @property
    def live_hosts(self) -> list[str]:
        return [self.host(i) for i in range(self.sites)]

    @property
    def dead_hosts(self) -> list[str]:
        return [self.host(self.sites + i) for i in range(self.dead)]

    @property
    def flaky_hosts(self) -> list[str]:
        return self.live_hosts[: self.flaky]


class MixModel:
    """The pages of the web as a function of (host, path, paper-time): deterministic, no I/O."""

    def __init__(self, spec: MixSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        self._index = {h: i for i, h in enumerate(spec.live_hosts)}

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def seeds(self) -> list[str]:
        return [self.url(h, "/") for h in self.spec.live_hosts]

    def page_count(self) -> int:
        """URLs on the live sites (home pages included): what a crawl can collect."""
        return self.spec.sites * (self.spec.pages + 1)

    def changing(self, host: str, k: int) -> float | None:
        """The phase (0..1) of a changing page; None for a page that never changes."""
        rng = random.Random(f"{self.spec.seed}:change:{host}:{k}")
        return rng.random() if rng.random() < self.spec.changing_share else None

    def version(self, host: str, k: int, hours: float) -> int:
        phase = self.changing(host, k)
        if phase is None or hours < 0:
            return 0
        return int(hours / self.spec.change_hours + phase)

    def is_down(self, host: str, hours: float) -> bool:
        if host in self.spec.dead_hosts:
            return True
        if host not in self.spec.flaky_hosts:
            return False
        start, end = self.spec.down_windows[self.spec.flaky_hosts.index(host)]
        return start <= hours < end

    def _links(self, host: str, k: int) -> list[str]:
        """Page k's links (k = -1: the home page): the next page, then random ones, some off-site."""
        spec = self.spec
        rng = random.Random(f"{spec.seed}:links:{host}:{k}")
        others = [h for h in spec.live_hosts if h != host] + spec.dead_hosts
        out = [self.url(host, f"/p/{k + 1}.html")] if k + 1 < spec.pages else []
        while len(out) < spec.links:
            if others and rng.random() < spec.offsite_share:
                target = rng.choice(others)
                size = spec.dead_pages if target in spec.dead_hosts else spec.pages
                out.append(self.url(target, f"/p/{rng.randrange(size)}.html"))
            else:
                out.append(self.url(host, f"/p/{rng.randrange(spec.pages)}.html"))
        return out

    def response(self, host: str, path: str, hours: float) -> tuple[int, dict[str, str], bytes]:
        if path == "/robots.txt":
            body = b"User-agent: *\nDisallow:\n"
            return 200, {"Content-Type": "text/plain", "Content-Length": str(len(body))}, body
        k = _page_number(path)
        if path != "/" and (k is None or k >= self.spec.pages or host not in self._index):
            body = b"<html><body>not found</body></html>"
            return 404, {"Content-Type": "text/html", "Content-Length": str(len(body))}, body
        k = -1 if path == "/" else k
        version = self.version(host, k, hours) if k >= 0 else 0
        links = "".join(f'<li><a href="{u}">{u.rsplit("/", 1)[-1]}</a></li>' for u in self._links(host, k))
        text = f"Site {self._index[host]} page {k}." + (f" Revision {version}." + " x" * version if version else "")
        body = (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{host} {path}</title></head>'
            f"<body><p>{text}</p><ul>{links}</ul></body></html>"
        ).encode()
        return (
            200,
            {
                "Content-Type": "text/html; charset=utf-8",
                "Content-Length": str(len(body)),
                "ETag": '"' + hashlib.sha1(body).hexdigest()[:16] + '"',
                "Last-Modified": formatdate(_EPOCH + version * 3600, usegmt=True),
            },
            body,
        )


def _page_number(path: str) -> int | None:
    if not (path.startswith("/p/") and path.endswith(".html")):
        return None
    digits = path[3:-5]
    return int(digits) if digits.isdigit() else None


class SilentListener:
    """An address that is down: it never accepts, and its accept queue is full, so SYNs are dropped."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(0)
        self._filler = socket.create_connection((host, port), timeout=2)  # takes the only queue slot

    def close(self) -> None:
        self._filler.close()
        self.sock.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _SiteServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        web = self.server.web
        hours = web.hours()
        if web.stopping.wait(web.spec.latency):
            self.close_connection = True
            return
        path = self.path.split("?", 1)[0]
        status, headers, content = web.model.response(self.server.host, path, hours)
        web.record(self.server.host, self.command, path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(content)


class _SiteServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, web: MixWeb) -> None:
        self.host = host
        self.web = web
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.serving = False  # set once serve_forever runs: shutdown() would wait forever for it otherwise
        super().__init__((host, port), _Handler)

    def process_request(self, request, client_address) -> None:  # noqa: ANN001 - socketserver's signature
        with self._lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:  # noqa: ANN001
        with self._lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client gone mid-answer, or the site went down under it

    def go_down(self) -> None:
        """Stop serving and cut every open connection (a kept-alive client must reconnect, and cannot)."""
        if self.serving:
            self.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.server_close()


class MixWeb:
    """Serves a MixSpec on one port of many loopback addresses; flips the flaky sites on schedule."""

    __test__ = False

    def __init__(self, spec: MixSpec | None = None, *, rtt_ms: float = 0.0) -> None:
        self.spec = spec or MixSpec()
        self.port = 0  # the port the URLs name (the proxy's, with rtt_ms)
        self._backend = 0  # the port the sites serve on
        self.rtt_ms = rtt_ms
        self._proxy = None
        self.model: MixModel = MixModel(self.spec, 0)
        self.stopping = threading.Event()
        self._t0: float | None = None
        self._clock_lock = threading.Lock()
        self._servers: dict[str, _SiteServer] = {}
        self._silent: dict[str, SilentListener] = {}
        self._threads: list[threading.Thread] = []
        self._hits: Counter[tuple[str, str, str]] = Counter()
        self._hits_lock = threading.Lock()
        self._toggler: threading.Thread | None = None

    # -- clock -------------------------------------------------------------------------------------

    def hours(self) -> float:
        """Paper-hours since the first request (which starts the clock)."""
        with self._clock_lock:
            if self._t0 is None:
                self._t0 = time.monotonic()
            return (time.monotonic() - self._t0) / self.spec.hour

    def _hours_if_started(self) -> float | None:
        with self._clock_lock:
            return None if self._t0 is None else (time.monotonic() - self._t0) / self.spec.hour

    # -- life --------------------------------------------------------------------------------------

    def start(self) -> MixWeb:
        last: OSError | None = None
        for _ in range(_BIND_ATTEMPTS):
            try:
                self._bind_all()
                break
            except OSError as exc:
                last = exc
                self._close_all()
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                    raise
        else:
            raise OSError(f"paper001 web: could not bind all servers: {last}")
        self.model = MixModel(self.spec, self.port)
        for srv in self._servers.values():
            self._serve(srv)
        self._toggler = threading.Thread(target=self._toggle_loop, name="paper001-toggler", daemon=True)
        self._toggler.start()
        return self

    def _bind_all(self) -> None:
        port = 0
        for host in self.spec.live_hosts:
            srv = _SiteServer(host, port, self)
            port = srv.server_address[1]
            self._servers[host] = srv
        self._backend = port
        if self.rtt_ms > 0:
            from testweb.delayproxy import DelayProxy

            self._proxy = self._proxy or DelayProxy(self.rtt_ms)
            port = 0
            for host in self.spec.live_hosts:
                port = self._proxy.add((host, port), (host, self._backend))
        for host in self.spec.dead_hosts:
            self._silent[host] = SilentListener(host, port)
        self.port = port

    def _serve(self, srv: _SiteServer) -> None:
        srv.serving = True
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        t.start()
        self._threads.append(t)

    def _toggle_loop(self) -> None:
        # Bounded by stop(): checks the flaky sites' windows every _TOGGLE_EVERY seconds.
        while not self.stopping.wait(_TOGGLE_EVERY):
            hours = self._hours_if_started()
            if hours is None:
                continue
            for host in self.spec.flaky_hosts:
                down = self.model.is_down(host, hours)
                if down and host in self._servers:
                    self._servers.pop(host).go_down()
                    if self._proxy is not None:
                        self._proxy.remove(host, self.port)
                    self._silent[host] = SilentListener(host, self.port)
                elif not down and host in self._silent:
                    self._silent.pop(host).close()
                    srv = _SiteServer(host, self._backend, self)
                    self._servers[host] = srv
                    self._serve(srv)
                    if self._proxy is not None:
                        self._proxy.add((host, self.port), (host, self._backend))

    def stop(self) -> None:
        self.stopping.set()
        if self._toggler is not None:
            self._toggler.join(5)
        self._close_all()
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None
        for t in self._threads:
            t.join(5)

    def _close_all(self) -> None:
        if self._proxy is not None:
            for host in self.spec.live_hosts:
                self._proxy.remove(host, self.port)
        for srv in list(self._servers.values()):
            srv.go_down()
        self._servers.clear()
        for listener in self._silent.values():
            listener.close()
        self._silent.clear()

    def __enter__(self) -> MixWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what happened -----------------------------------------------------------------------------

    def seeds(self) -> list[str]:
        return self.model.seeds()

    def record(self, host: str, method: str, path: str) -> None:
        with self._hits_lock:
            self._hits[(host, method, path)] += 1

    def hits(self, host: str, method: str, path: str) -> int:
        """Requests answered for (host, method, path)."""
        with self._hits_lock:
            return self._hits[(host, method, path)]

    def answered(self) -> int:
        with self._hits_lock:
            return sum(self._hits.values())
