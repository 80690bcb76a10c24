"""A small site for the archive's replay tests: every kind of answer a WARC must hold for the site to replay.

One server on one loopback address, everything drawn from a seed (`ReplaySpec.seed`), so another seed is a
web no test has seen:

* `/` redirects (301, 302, 307 or 308) to `/index.html`, the real home page;
* `/index.html` links to `pages` pages `/p/<k>.html`, each of which links to a deep page `/p/<k>/deep.html`;
* some links lead to missing pages (404, all with the same "not found" page), one to `/old.html` (a redirect
  to a page), one to `/gone.html` (410), one to `/broken.html` (500), one to `/private/…` (disallowed by
  robots.txt: never requested);
* `copies` pages `/copy/<k>.html` serve byte for byte the body of `/p/<k>.html` (duplicate pages);
* an image `/logo.png` in every page (a resource: checked, not parsed);
* robots.txt names `/sitemap.xml`, which lists the pages and an orphan `/orphan.html` linked from nowhere.

Every request answered is in `access_log` (method, path, status), so a test can hold an archive against
what the site really saw.
"""

from __future__ import annotations

import html
import random
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from testweb.serving import ServedWeb, serve_in_thread, server_stop

_WORDS = (
    "archive replay harbor lantern meadow orbit pixel quartz river signal timber umbrella velvet willow amber "
    "basalt cobalt dune ember fjord glacier horizon island jasper kelp lagoon mosaic nebula oasis prairie"
).split()
NOT_FOUND = b"<!doctype html><html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>"
LOGO = bytes(range(256)) * 4  # any bytes: an image is checked, not parsed


@dataclass(frozen=True)
class ReplaySpec:
    host: str = "127.0.0.71"
    seed: int = 1

    def rng(self) -> random.Random:
        return random.Random(self.seed)


@dataclass(frozen=True)
class Access:
    method: str
    path: str
    status: int


class ReplayWeb(ServedWeb):
    __test__ = False

    def __init__(self, spec: ReplaySpec | None = None) -> None:
        self.spec = spec or ReplaySpec()
        rng = self.spec.rng()
        self.pages = rng.randint(4, 9)
        self.copies = rng.randint(1, min(3, self.pages))
        self.missing = [f"/{rng.choice(_WORDS)}-{k}.html" for k in range(rng.randint(2, 4))]
        self.home_redirect = rng.choice((301, 302, 307, 308))
        self.words = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(20, 60))) for _ in range(self.pages)]
        self.port = 0
        self.access_log: list[Access] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- what it serves ---------------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        return f"http://{self.spec.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def page_paths(self) -> list[str]:
        return [f"/p/{k}.html" for k in range(self.pages)]

    def deep_paths(self) -> list[str]:
        return [f"/p/{k}/deep.html" for k in range(self.pages)]

    def copy_paths(self) -> list[str]:
        return [f"/copy/{k}.html" for k in range(self.copies)]

    def _page(self, title: str, text: str, links: list[str]) -> bytes:
        items = "".join(f'<li><a href="{html.escape(link)}">{html.escape(link)}</a></li>' for link in links)
        return (
            f"<!doctype html><html><head><title>{html.escape(title)}</title></head><body>"
            f'<h1>{html.escape(title)}</h1><img src="/logo.png" alt="logo"><p>{html.escape(text)}</p>'
            f"<ul>{items}</ul></body></html>"
        ).encode()

    def answer(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of a GET of `path`."""
        html_type = {"Content-Type": "text/html; charset=utf-8"}
        if path == "/":
            return self.home_redirect, {"Location": "/index.html", **html_type}, b"<a href='/index.html'>moved</a>"
        if path == "/index.html":
            links = [*self.page_paths(), *self.copy_paths(), *self.missing]
            links += ["/old.html", "/gone.html", "/broken.html", "/private/secret.html"]
            return 200, html_type, self._page("Home", self.words[0], links)
        if path == "/robots.txt":
            text = f"User-agent: *\nDisallow: /private/\nSitemap: {self.origin}/sitemap.xml\n"
            return 200, {"Content-Type": "text/plain"}, text.encode()
        if path == "/sitemap.xml":
            locs = "".join(f"<url><loc>{self.url(p)}</loc></url>" for p in [*self.page_paths(), "/orphan.html"])
            body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
            return 200, {"Content-Type": "application/xml"}, body.encode()
        if path == "/logo.png":
            return 200, {"Content-Type": "image/png"}, LOGO
        if path == "/old.html":
            return 301, {"Location": "/p/0.html", **html_type}, b""
        if path == "/gone.html":
            return 410, html_type, b"<p>gone for good</p>"
        if path == "/broken.html":
            return 500, html_type, b"<p>internal error</p>"
        if path == "/orphan.html":
            return 200, html_type, self._page("Orphan", "listed in the sitemap only", ["/index.html"])
        for k in range(self.pages):
            if path in (f"/p/{k}.html", f"/copy/{k}.html") and (path.startswith("/p/") or k < self.copies):
                return 200, html_type, self._page(f"Page {k}", self.words[k], [f"/p/{k}/deep.html", "/index.html"])
            if path == f"/p/{k}/deep.html":
                return 200, html_type, self._page(f"Deep {k}", self.words[k][::-1], ["/index.html"])
        return 404, html_type, NOT_FOUND

    # -- serving ----------------------------------------------------------------------------------------
    def start(self) -> ReplayWeb:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def _serve(self, *, body_too: bool) -> None:
                path = urlsplit(self.path).path
                status, headers, body = web.answer(path)
                with web._lock:
                    web.access_log.append(Access(self.command, path, status))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body_too:
                    self.wfile.write(body)

            def do_GET(self) -> None:
                self._serve(body_too=True)

            def do_HEAD(self) -> None:
                self._serve(body_too=False)

        self._server = serve_in_thread(self.spec.host, 0, Handler)
        self.port = self._server.server_address[1]
        return self

    def stop(self) -> None:
        server_stop(self._server)
