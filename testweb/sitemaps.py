"""A small site that publishes sitemaps, for the archive and sitemap tests and the demo.

One server on one loopback address. Its home page links to `linked` pages and to `duplicates` pages whose
body is byte for byte the body of /a/0.html; `orphans` more pages are linked from nowhere and listed only
in sitemaps:

* robots.txt: `Sitemap: /maps/index.xml.gz` (a gzip sitemap index), /private/ disallowed;
* /maps/index.xml.gz lists /maps/nested.xml (an index listing /maps/pages.xml.gz, a gzip urlset with
  lastmod/changefreq/priority), /maps/urls.txt (a plain-text sitemap), /maps/bad.xml (not well-formed),
  /maps/xxe.xml (an external entity that must not be read), /maps/deep-0.xml (indexes nested deeper
  than the limit), and a sitemap on another host (not requested);
* /sitemap.xml (found without robots.txt) lists one more orphan;
* the urlset also lists a page on another host and a disallowed one: neither is added.

HTML pages are gzip-encoded when the client accepts it, so an archive record must describe the decoded
body it stores. Everything is computed from the spec: `expected()` says what a crawl must find.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass(frozen=True)
class SitemapSiteSpec:
    host: str = "127.0.0.61"
    linked: int = 4
    orphans: int = 6  # split between the gzip urlset and the text sitemap
    duplicates: int = 2
    deep: int = 5  # nested indexes below /maps/index.xml.gz's /maps/deep-0.xml
    words: str = "archive"
    robots_sitemaps: tuple[str, ...] = ()  # more robots.txt Sitemap: lines (absolute URLs, e.g. on other hosts)


class SitemapSite:
    def __init__(self, spec: SitemapSiteSpec | None = None) -> None:
        self.spec = spec or SitemapSiteSpec()
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self.requests: list[str] = []
        self._lock = threading.Lock()

    # -- what it serves ---------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        return f"http://{self.spec.host}:{self.port}"

    def linked_paths(self) -> list[str]:
        return [f"/a/{k}.html" for k in range(self.spec.linked)]

    def duplicate_paths(self) -> list[str]:
        return [f"/dup/{k}.html" for k in range(self.spec.duplicates)]

    def orphan_paths(self) -> list[str]:
        return [f"/orphan/{k}.html" for k in range(self.spec.orphans)] + ["/from-default.html"]

    def expected_pages(self) -> list[str]:
        """Every URL a crawl seeded with the home page must visit."""
        return [f"{self.origin}{p}" for p in ["/", *self.linked_paths(), *self.duplicate_paths(), *self.orphan_paths()]]

    def _page(self, title: str, links: list[str]) -> bytes:
        anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
        return (
            f"<!doctype html><html><head><title>{title}</title></head>"
            f"<body><h1>{title}</h1><p>{self.spec.words} {title}</p>{anchors}</body></html>"
        ).encode()

    def _urlset(self, paths: list[str], *, extra: list[str] = ()) -> bytes:
        items = "".join(
            f"<url><loc>{self.origin}{p}</loc><lastmod>2026-0{1 + k % 9}-15T08:00:00+00:00</lastmod>"
            f"<changefreq>weekly</changefreq><priority>0.{k % 10}</priority></url>"
            for k, p in enumerate(paths)
        ) + "".join(f"<url><loc>{u}</loc></url>" for u in extra)
        return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>'.encode()

    def _index(self, locs: list[str]) -> bytes:
        items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
        return f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</sitemapindex>'.encode()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        o, spec = self.origin, self.spec
        half = spec.orphans // 2
        if path == "/robots.txt":
            more = "".join(f"Sitemap: {u}\n" for u in spec.robots_sitemaps)
            robots = f"User-agent: *\nDisallow: /private/\nSitemap: {o}/maps/index.xml.gz\n{more}"
            return 200, "text/plain", robots.encode()
        if path == "/":
            return 200, "text/html", self._page("Home", [*self.linked_paths(), *self.duplicate_paths()])
        if path in self.linked_paths():
            return 200, "text/html", self._page(f"Page {path}", ["/"])
        if path in self.duplicate_paths():
            return 200, "text/html", self._page("Page /a/0.html", ["/"])  # /a/0.html's body, byte for byte
        if path in self.orphan_paths():
            return 200, "text/html", self._page(f"Orphan {path}", ["/"])
        if path == "/maps/index.xml.gz":
            locs = [f"{o}/maps/nested.xml", f"{o}/maps/urls.txt", f"{o}/maps/bad.xml", f"{o}/maps/xxe.xml",
                    f"{o}/maps/deep-0.xml", "http://127.0.0.254:9/elsewhere.xml"]  # fmt: skip
            return 200, "application/gzip", gzip.compress(self._index(locs))
        if path == "/maps/nested.xml":
            return 200, "application/xml", self._index([f"{o}/maps/pages.xml.gz"])
        if path == "/maps/pages.xml.gz":
            extra = ["http://127.0.0.254:9/offsite.html", f"{o}/private/secret.html"]
            return 200, "application/gzip", gzip.compress(self._urlset(self.orphan_paths()[:half], extra=extra))
        if path == "/maps/urls.txt":
            return 200, "text/plain", "".join(f"{o}{p}\n" for p in self.orphan_paths()[half:-1]).encode()
        if path == "/maps/bad.xml":
            return 200, "application/xml", b'<?xml version="1.0"?><urlset><url><loc>broken'
        if path == "/maps/xxe.xml":
            return (
                200,
                "application/xml",
                (
                    b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
                    b"<urlset><url><loc>&x;</loc></url></urlset>"
                ),
            )
        if path.startswith("/maps/deep-"):
            k = int(path.removeprefix("/maps/deep-").removesuffix(".xml"))
            if k < spec.deep:
                return 200, "application/xml", self._index([f"{o}/maps/deep-{k + 1}.xml"])
            return 200, "application/xml", self._urlset(["/never-reached.html"])
        if path == "/sitemap.xml":
            return 200, "application/xml", self._urlset(["/from-default.html"])
        return 404, "text/html", self._page("Not found", [])

    # -- serving ------------------------------------------------------------------------------------
    def start(self) -> SitemapSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with site._lock:
                    site.requests.append(path)
                status, ctype, body = site.answer(path)
                encode = ctype == "text/html" and "gzip" in self.headers.get("Accept-Encoding", "")
                if encode:
                    body = gzip.compress(body, mtime=0)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                if encode:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer((self.spec.host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> SitemapSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
