"""A small local web whose pages are served under more than one URL (seed 003's page dedup).

`DuplicateWeb(variant)` serves one site on 127.0.<variant>.1: the home page is both `/` and `/index.html`
(byte for byte), `/b.html` has a printer copy `/print/b.html` with the same bytes (its links are absolute,
so they resolve the same from both), and three more pages link among them. `/robots.txt` and
`/sitemap.xml` are 404. The model says what a crawl must find (`urls`), which URLs are copies of which
(`copies`), and the link graph once each copy is merged into its first URL (`merged_links`), so a test can
rank that graph itself and compare.
"""

from __future__ import annotations

import html
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# path -> (title, text, links). The text is long enough for a language detector.
_PAGES = {
    "/": (
        "Harbor library",
        "The harbor library opens every morning and lends books, maps and records to the people of the town.",
        ["/index.html", "/a.html", "/b.html", "/c.html"],
    ),
    "/a.html": (
        "Opening hours",
        "The reading room is open from nine in the morning until six in the evening on working days.",
        ["/", "/b.html", "/index.html"],
    ),
    "/b.html": (
        "Collections",
        "The library keeps old charts of the coast, ship registers and letters written by the harbor masters.",
        ["/", "/c.html", "/print/b.html"],
    ),
    "/c.html": (
        "Contact",
        "Write to the librarian or call the front desk; visitors from other towns are always welcome here.",
        ["/a.html", "/d.html"],
    ),
    "/d.html": (
        "Events",
        "Every month the library invites a writer to read from a new book and talk with the readers.",
        ["/"],
    ),
}
# URL path -> the path whose bytes it serves (a copy).
_COPIES = {"/index.html": "/", "/print/b.html": "/b.html"}


class DuplicateWeb:
    __test__ = False

    def __init__(self, variant: int = 73) -> None:
        self.host = f"127.0.{variant}.1"
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request answered

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def seed(self) -> str:
        return self.url("/")

    def body(self, path: str) -> bytes | None:
        source = _COPIES.get(path, path)
        if source not in _PAGES:
            return None
        title, text, links = _PAGES[source]
        # Absolute links: a copy in another directory (/print/) names the same targets as its original.
        anchors = " ".join(f'<a href="{html.escape(self.url(p))}">{html.escape(p)}</a>' for p in links)
        return (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
            f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p><p>{anchors}</p></body></html>"
        ).encode()

    # -- what a crawl must find -----------------------------------------------------------------------------
    def urls(self) -> set[str]:
        """Every URL a crawl from the seed knows: each page and each copy (all answer 200)."""
        return {self.url(p) for p in [*_PAGES, *_COPIES]}

    def copies(self) -> dict[str, str]:
        """Copy URL -> the URL of the page it copies (the one a crawl from `/` fetches first)."""
        return {self.url(c): self.url(p) for c, p in _COPIES.items()}

    def merged_links(self) -> set[tuple[str, str]]:
        """The link graph with every copy merged into its page: distinct pairs, none from a page to itself."""
        out = set()
        for path in [*_PAGES, *_COPIES]:
            source = _COPIES.get(path, path)
            for target in _PAGES[source][2]:
                a, b = self.url(source), self.url(_COPIES.get(target, target))
                if a != b:
                    out.add((a, b))
        return out

    # -- serving --------------------------------------------------------------------------------------------
    def __enter__(self) -> DuplicateWeb:
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
                web.requests.append((self.command, path))
                body = web.body(path)
                status = 200 if body is not None else 404
                body = body if body is not None else b"not found"
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="duplicate-web", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
