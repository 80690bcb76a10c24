"""A small local web whose links break in every way a site owner meets, with its own manifest
of the broken links: 404 and 410 pages, broken images and scripts, redirects to a 404 and to a dead server,
a missing #fragment, a nofollow link, and anchor text with markup and spreadsheet-formula prefixes.

`LinkWeb(variant)` serves one site on 127.0.<variant>.1 and names a dead server on 127.0.<variant>.2 (nothing
listens there: connection refused). `manifest()` lists each broken link as (source URL, anchor text as a
reader sees it, target URL, reason); a report must list exactly these and nothing else.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testweb.ports import free_port


@dataclass(frozen=True)
class BrokenLink:
    source: str
    anchor_text: str
    target: str
    reason: str  # "404", "410", "redirect to 404", "dead server", "missing anchor", ...


HEAD_REFUSED = frozenset({"/style.css"})  # a server that does not do HEAD for this one


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>".encode()


class LinkWeb:
    __test__ = False

    def __init__(self, variant: int = 61) -> None:
        self.host = f"127.0.{variant}.1"
        self.dead_host = f"127.0.{variant}.2"
        self._server: ThreadingHTTPServer | None = None
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request answered
        self.port = 0
        self.dead_port = free_port(self.dead_host)

    # -- what it serves ------------------------------------------------------------------------------------
    def _routes(self) -> dict[str, tuple[int, dict[str, str], bytes]]:
        dead = f"http://{self.dead_host}:{self.dead_port}/"
        home = _page(
            "Home",
            '<p><a href="/about">About   us</a> <a href="/missing"><b>Missing</b>\n  report</a>'
            ' <a href="/gone">Old news</a> <a href="/moved">Moved page</a> <a href="/away">Partner site</a>'
            ' <a href="/about#team">Our team</a> <a href="/about#nowhere">Board members</a>'
            ' <a rel="nofollow" href="/private">Login</a>'
            ' <a href="/formula">=HYPERLINK("http://evil.example","click")</a>'
            ' <a href="/about?ref=sum">@SUM(A1)</a>'
            f' <a href="{dead}">Dead partner</a></p>'
            '<img src="/img/logo.png" alt="Logo"><img src="/img/broken.png" alt="Broken  photo">'
            '<script src="/js/missing.js"></script><link rel="stylesheet" href="/style.css">',
        )
        about = _page(
            "About",
            '<h2 id="team">Team</h2><a name="history">History</a>'
            '<p><a href="/">Home</a> <a href="/missing">-1 points</a> <a href="/about#history">History</a></p>',
        )
        ok_html = {"Content-Type": "text/html; charset=utf-8"}
        return {
            "/": (200, ok_html, home),
            "/about": (200, ok_html, about),
            "/about?ref=sum": (200, ok_html, _page("Sums", "<p>No links here.</p>")),
            "/gone": (410, ok_html, _page("Gone", "gone")),
            "/moved": (301, {"Location": "/missing"}, b""),
            "/away": (302, {"Location": dead + "partner"}, b""),
            "/img/logo.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n"),
            "/style.css": (200, {"Content-Type": "text/css"}, b"body{}"),
        }

    def manifest(self) -> list[BrokenLink]:
        o = self.origin
        dead = f"http://{self.dead_host}:{self.dead_port}/"
        return [
            BrokenLink(f"{o}/", "Missing report", f"{o}/missing", "404"),
            BrokenLink(f"{o}/", "Old news", f"{o}/gone", "410"),
            BrokenLink(f"{o}/", "Moved page", f"{o}/moved", "redirect to 404"),
            BrokenLink(f"{o}/", "Partner site", f"{o}/away", "redirect to a dead server"),
            BrokenLink(f"{o}/", "Board members", f"{o}/about#nowhere", "missing anchor"),
            BrokenLink(f"{o}/", "Login", f"{o}/private", "404 (nofollow, followed by default)"),
            BrokenLink(f"{o}/", '=HYPERLINK("http://evil.example","click")', f"{o}/formula", "404"),
            BrokenLink(f"{o}/", "Dead partner", dead, "dead server"),
            BrokenLink(f"{o}/", "Broken photo", f"{o}/img/broken.png", "404 image"),
            BrokenLink(f"{o}/", "", f"{o}/js/missing.js", "404 script"),
            BrokenLink(f"{o}/about", "-1 points", f"{o}/missing", "404"),
        ]

    # -- serving --------------------------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def seeds(self) -> list[str]:
        return [f"{self.origin}/"]

    def start(self) -> LinkWeb:
        routes = self._routes()
        log = self.requests

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                log.append((self.command, self.path))
                status, headers, body = routes.get(self.path, (404, {"Content-Type": "text/html"}, _page("404", "")))
                if self.command == "HEAD" and self.path in HEAD_REFUSED:
                    status, headers, body = 405, {"Allow": "GET"}, b""
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(body)

            do_HEAD = do_GET

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> LinkWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
