"""A loopback web whose pages change on known schedules: the ground truth for the staleness benchmark.

Each server (its own 127.0.x.y address) serves pages /p<j>.html. Page j changes every `interval` seconds
from its own `phase`: version v lives from `version_start(j, v)` to `version_start(j, v + 1)`. Nothing is
random at serving time, so the change log is a function of the clock: the benchmark asks `stale_since`
when a stored copy (known by its body's sha1, the checksum the load agent stores) stopped being the live
page. Every version has its own Last-Modified (the second it began), ETag and length, so the active
scan's HEAD sees every change.

A server's answer takes `latency + size / throughput` seconds, both scaled by its load in the current
hour of day (`load[hour]`, 1 = its base speed): servers are fast or slow, and faster or slower by hour.
Pages link to a few others, popular pages more often (a Zipf law), so pages differ in in-degree.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class PageSpec:
    server: int
    number: int  # j within its server
    size: int  # bytes of the body
    interval: float  # seconds between changes
    phase: float  # seconds into its first interval at t0
    links: tuple[int, ...]  # page numbers on the same server


@dataclass(frozen=True)
class ServerSpec:
    index: int
    host: str
    latency: float  # seconds before the first byte, at load 1
    throughput: float  # bytes per second, at load 1
    load: tuple[float, ...]  # 24 factors by hour of day


@dataclass
class ChangingSpec:
    servers: int = 4
    pages: int = 40  # per server
    min_interval: float = 6.0
    max_interval: float = 300.0
    min_size: int = 2_000
    max_size: int = 300_000
    seed: int = 7
    links: int = 4  # links drawn per page (to pages of its server; repeats and self-links dropped)
    inlink_zipf: float = 1.0  # page k is drawn with weight 1/(k+1)^zipf: higher spreads the in-links wider
    # Sitemaps (/sitemap.xml, named in robots.txt): each page's lastmod the start of its live version, except
    # on the `liars` (server indexes), whose sitemap says every page changed at the moment it is read.
    sitemaps: bool = False
    liars: tuple[int, ...] = ()
    indexnow_key: str = ""  # served as /<key>.txt on every server, for IndexNow pushes
    # Changes at random (a Poisson process of each page's mean interval, from its own seeded stream) instead of
    # every `interval` seconds: the model the change-rate estimator assumes (scheduling.freshness).
    poisson: bool = False
    # Per server index, its own (min_interval, max_interval), e.g. a server whose pages hardly change.
    server_intervals: dict[int, tuple[float, float]] = field(default_factory=dict)
    # Servers slower by hour of day (`load`); False: every server at its base speed whatever the hour, so a
    # run's figures do not depend on the time it is taken at.
    hourly: bool = True


@dataclass
class ChangingWeb:
    spec: ChangingSpec
    t0: float = field(default_factory=time.time)
    servers: list[ServerSpec] = field(default_factory=list)
    pages: dict[tuple[int, int], PageSpec] = field(default_factory=dict)
    requests: int = 0
    requests_by_server: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = random.Random(self.spec.seed)
        for i in range(self.spec.servers):
            peak = rng.randrange(24)
            swing = 2.0 if self.spec.hourly else 0.0
            load = tuple(1.0 + swing * max(0.0, math.cos(2 * math.pi * (h - peak) / 24)) for h in range(24))
            self.servers.append(
                ServerSpec(
                    i,
                    f"127.0.{60 + i // 200}.{10 + i % 200}",
                    latency=rng.uniform(0.02, 0.15),
                    throughput=rng.choice([60_000.0, 150_000.0, 400_000.0, 1_000_000.0]),
                    load=load,
                )
            )
            popularity = [1.0 / (k + 1) ** self.spec.inlink_zipf for k in range(self.spec.pages)]
            for j in range(self.spec.pages):
                low, high = self.spec.server_intervals.get(i, (self.spec.min_interval, self.spec.max_interval))
                lo, hi = math.log(low), math.log(high)
                lo_s, hi_s = math.log(self.spec.min_size), math.log(self.spec.max_size)
                interval = round(math.exp(rng.uniform(lo, hi)), 1)
                links = tuple(
                    sorted(set(rng.choices(range(self.spec.pages), weights=popularity, k=self.spec.links)) - {j})
                )
                self.pages[(i, j)] = PageSpec(
                    i, j, int(math.exp(rng.uniform(lo_s, hi_s))), interval, rng.uniform(0, interval), links
                )
        self._changes: dict[tuple[int, int], list[float]] = {}
        if self.spec.poisson:
            for key, page in self.pages.items():
                self._changes[key] = self._poisson_changes(page)
        self._checksums: dict[str, tuple[int, int, int]] = {}
        self._lock = threading.Lock()
        self._httpd: list[ThreadingHTTPServer] = []

    # -- the schedule -------------------------------------------------------------------------------
    HORIZON = 6 * 3600.0  # seconds of Poisson changes drawn ahead

    def _poisson_changes(self, page: PageSpec) -> list[float]:
        """The times version 1, 2, ... begin: exponential gaps of mean `interval` from t0 (a bounded list)."""
        rng = random.Random(f"{self.spec.seed}/{page.server}/{page.number}")
        times, at = [], self.t0
        while at < self.t0 + self.HORIZON and len(times) < 100_000:
            at += rng.expovariate(1.0 / page.interval)
            times.append(at)
        return times

    def version(self, page: PageSpec, at: float) -> int:
        changes = self._changes.get((page.server, page.number))
        if changes is not None:
            return bisect.bisect_right(changes, at)
        return math.floor((at - self.t0 + page.phase) / page.interval)

    def version_start(self, page: PageSpec, v: int) -> float:
        changes = self._changes.get((page.server, page.number))
        if changes is not None:
            return self.t0 - page.interval if v <= 0 else changes[min(v, len(changes)) - 1]
        return self.t0 + v * page.interval - page.phase

    def body(self, page: PageSpec, v: int) -> bytes:
        server = self.servers[page.server]
        links = "".join(f'<a href="/p{k}.html">page {k}</a> ' for k in page.links)
        head = (
            f"<html><head><title>s{page.server} p{page.number} v{v}</title></head><body>"
            f"<p>version {v} of page {page.number} on {server.host}</p>{links}<pre>"
        ).encode()
        tail = b"</pre></body></html>"
        fill = max(0, page.size - len(head) - len(tail))
        pad = hashlib.sha256(f"{page.server}/{page.number}/{v}".encode()).hexdigest().encode()
        return head + (pad * (fill // len(pad) + 1))[:fill] + tail

    def _checksum(self, page: PageSpec, v: int) -> str:
        digest = hashlib.sha1(self.body(page, v)).hexdigest()
        with self._lock:
            self._checksums[digest] = (page.server, page.number, v)
        return digest

    def stale_since(self, page: PageSpec, checksum: str, at: float) -> float | None:
        """When the stored copy with this checksum stopped being the live page (None: it is still live,
        or unknown). Every version served was registered when it was served."""
        found = self._checksums.get(checksum)
        if found is None or found[:2] != (page.server, page.number):
            return None
        v = found[2]
        if self.version(page, at) == v:
            return None
        return self.version_start(page, v + 1)

    def robots(self, server: ServerSpec) -> bytes:
        text = "User-agent: *\nAllow: /\n"
        if self.spec.sitemaps:
            text += f"Sitemap: http://{server.host}:{self.port(server.index)}/sitemap.xml\n"
        return text.encode()

    def sitemap(self, server: ServerSpec, now: float) -> bytes:
        """Every page of the server with its lastmod: when its live version began, or now on a liar."""
        entries = []
        for page in (p for p in self.pages.values() if p.server == server.index):
            start = now if server.index in self.spec.liars else self.version_start(page, self.version(page, now))
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))
            entries.append(f"<url><loc>{self.url(page)}</loc><lastmod>{stamp}</lastmod></url>")
        head = '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        return (head + "".join(entries) + "</urlset>").encode()

    def page_of(self, host: str, path: str) -> PageSpec | None:
        for s in self.servers:
            if s.host == host and path.startswith("/p") and path.endswith(".html"):
                try:
                    return self.pages.get((s.index, int(path[2:-5])))
                except ValueError:
                    return None
        return None

    def urls(self) -> list[str]:
        return [self.url(p) for p in self.pages.values()]

    def url(self, page: PageSpec) -> str:
        server = self.servers[page.server]
        return f"http://{server.host}:{self.port(page.server)}/p{page.number}.html"

    def port(self, server: int) -> int:
        return self._httpd[server].server_address[1]

    # -- serving ------------------------------------------------------------------------------------
    def start(self) -> ChangingWeb:
        for s in self.servers:
            httpd = ThreadingHTTPServer((s.host, 0), _Handler)
            httpd.daemon_threads = True
            httpd.web, httpd.spec = self, s  # type: ignore[attr-defined]
            threading.Thread(target=httpd.serve_forever, daemon=True, name=f"changing-{s.host}").start()
            self._httpd.append(httpd)
        return self

    def stop(self) -> None:
        for httpd in self._httpd:
            httpd.shutdown()
            httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        web: ChangingWeb = self.server.web  # type: ignore[attr-defined]
        spec: ServerSpec = self.server.spec  # type: ignore[attr-defined]
        web.requests += 1
        web.requests_by_server[spec.index] = web.requests_by_server.get(spec.index, 0) + 1
        now = time.time()
        slow = spec.load[time.localtime(now).tm_hour]
        if self.path == "/robots.txt":
            self._send(200, {"Content-Type": "text/plain"}, web.robots(spec), body)
            return
        if web.spec.sitemaps and self.path == "/sitemap.xml":
            self._send(200, {"Content-Type": "application/xml"}, web.sitemap(spec, now), body)
            return
        if web.spec.indexnow_key and self.path == f"/{web.spec.indexnow_key}.txt":
            self._send(200, {"Content-Type": "text/plain"}, web.spec.indexnow_key.encode(), body)
            return
        page = web.page_of(spec.host, self.path)
        if page is None:
            self._send(404, {"Content-Type": "text/plain"}, b"not found", body)
            return
        v = web.version(page, now)
        content = web.body(page, v)
        web._checksum(page, v)
        time.sleep(spec.latency * slow + (len(content) / spec.throughput * slow if body else 0.0))
        headers = {
            "Content-Type": "text/html; charset=utf-8",
            "Last-Modified": formatdate(web.version_start(page, v), usegmt=True),
            "ETag": f'"{page.server}-{page.number}-{v}"',
        }
        self._send(200, headers, content, body)

    def _send(self, status: int, headers: dict[str, str], content: bytes, body: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)
