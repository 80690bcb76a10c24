"""Two host names on one address and port (seed 003's site dedup by IP): one site under two names,
and two sites under two names (name-based virtual hosting), served by the Host header.

`VhostWeb()` listens on 127.0.0.1 on three ports, one per pair. On each port `127.0.0.1` is the first site
(the crawl's seed) and `localhost` a later server on the same address and port (it resolves to 127.0.0.1
from the hosts file, no DNS):

  same    localhost serves the same pages byte for byte: one site under two names
  vhost   localhost serves another site, with another home page: virtual hosting
  broken  localhost serves another site whose home page answers 500

The first site's home page links to `localhost`'s `/b.html` (not its home page, which the crawler must then
add itself). Links within a site are relative, so a copy's bytes are the original's. `/robots.txt` and
`/sitemap.xml` are 404. Every request is recorded as (host, method, path).
"""

from __future__ import annotations

import html
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAIRS = ("same", "vhost", "broken")
FIRST, LATER = "127.0.0.1", "localhost"

# path -> (title, links) of each site; the text of a page is its title and its site's name.
_FIRST_SITE = {
    "/": ("Home", ["a.html", f"http://{LATER}:{{port}}/b.html"]),
    "/a.html": ("About", ["/", "b.html"]),
    "/b.html": ("Contact", ["/"]),
}
_OTHER_SITE = {
    "/": ("Welcome", ["c.html"]),
    "/b.html": ("Staff", ["c.html", "/"]),
    "/c.html": ("Courses", ["b.html"]),
}


class VhostWeb:
    __test__ = False

    def __init__(self) -> None:
        self.ports: dict[str, int] = {}
        self._servers: list[ThreadingHTTPServer] = []
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str, str]] = []  # (host:port, method, path) of every request answered

    def url(self, pair: str, host: str, path: str) -> str:
        return f"http://{host}:{self.ports[pair]}{path}"

    def seeds(self) -> list[str]:
        return [self.url(pair, FIRST, "/") for pair in PAIRS]

    def site(self, pair: str, host: str) -> dict[str, tuple[str, list[str]]]:
        return _FIRST_SITE if host == FIRST or pair == "same" else _OTHER_SITE

    def urls(self, pair: str, host: str) -> set[str]:
        """The URLs of one site a crawl knows: its pages (for `localhost`, its home page too)."""
        return {self.url(pair, host, p) for p in self.site(pair, host)}

    def gets(self, pair: str, host: str) -> list[str]:
        """The paths GET requested from one host name, in order."""
        origin = f"{host}:{self.ports[pair]}"
        return [path for who, method, path in self.requests if who == origin and method == "GET"]

    def body(self, pair: str, host: str, path: str) -> tuple[int, bytes]:
        if host == LATER and pair == "broken" and path == "/":
            return 500, b"internal error"
        site = self.site(pair, host)
        if path not in site:
            return 404, b"not found"
        title, links = site[path]
        name = "Harbor college" if site is _FIRST_SITE else "Hill school"
        anchors = " ".join(
            f'<a href="{html.escape(h.format(port=self.ports[pair]))}">{html.escape(h)}</a>' for h in links
        )
        page = (
            f'<!doctype html><html lang="en"><head><title>{title} - {name}</title></head>'
            f"<body><h1>{title}</h1><p>{name}</p><p>{anchors}</p></body></html>"
        )
        return 200, page.encode()

    # -- serving --------------------------------------------------------------------------------------------
    def __enter__(self) -> VhostWeb:
        for pair in PAIRS:
            server = ThreadingHTTPServer((FIRST, 0), self._handler(pair))
            server.daemon_threads = True
            self.ports[pair] = server.server_address[1]
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, name=f"vhost-web-{pair}", daemon=True).start()
        return self

    def _handler(self, pair: str) -> type[BaseHTTPRequestHandler]:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._answer(send_body=True)

            def do_HEAD(self) -> None:
                self._answer(send_body=False)

            def _answer(self, *, send_body: bool) -> None:
                path = self.path.split("?", 1)[0]
                origin = (self.headers.get("Host") or "").lower()
                with web._lock:
                    web.requests.append((origin, self.command, path))
                host = origin.rsplit(":", 1)[0]
                status, body = web.body(pair, host, path)
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

        return Handler

    def __exit__(self, *exc) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
