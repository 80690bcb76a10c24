"""A local web for crawl jobs, with an access log that shows what each job's limits let through.

Two sites on 127.0.<variant>.1 and .2, one port:
- the tree: `/` links to `/d1/0.html` … `/d1/{fanout-1}.html`, each page of depth d to `fanout` pages of
  depth d+1 (`/d{d+1}/{k}.html`) down to `depth`, and every page to a `/calendar/{d}-{k}.html` page (the
  calendar pages link on to deeper pages too). A page's depth from `/` is written in its path.
- the wide site: `/` and `/w/{k}.html`, `pages` of them, each linking to `links` others: many more pages
  than a capped job may take.
No robots.txt and no sitemap (404): every request in the log is a page's.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from testweb.serving import ServedWeb, serve_in_thread, server_stop

DEPTH_RE = re.compile(r"^/d(\d+)/(\d+)\.html$")


@dataclass(frozen=True)
class Hit:
    host: str
    method: str
    path: str
    status: int


def _page(title: str, links: list[str]) -> bytes:
    body = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


class JobWeb(ServedWeb):
    __test__ = False

    def __init__(self, *, variant: int = 77, fanout: int = 3, depth: int = 5, pages: int = 120, links: int = 6,
                 log_path: str | None = None) -> None:  # fmt: skip
        self.tree_host, self.wide_host = f"127.0.{variant}.1", f"127.0.{variant}.2"
        self.fanout, self.depth, self.pages, self.links = fanout, depth, pages, links
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self._log = Path(log_path) if log_path else None
        self.port = 0

    # -- what it serves ---------------------------------------------------------------------------------------
    def tree_page(self, path: str) -> bytes | None:
        if path == "/":
            depth, k = 0, 0
        elif (m := DEPTH_RE.match(path)) is not None:
            depth, k = int(m.group(1)), int(m.group(2))
            if not (1 <= depth <= self.depth and k < self.fanout**depth):
                return None
        elif path.startswith("/calendar/"):
            return _page("Calendar", ["/", f"/d{self.depth}/0.html"])
        else:
            return None
        fanout = self.fanout if depth < self.depth else 0
        children = [f"/d{depth + 1}/{k * self.fanout + j}.html" for j in range(fanout)]
        return _page(f"Tree {depth}-{k}", [*children, f"/calendar/{depth}-{k}.html", "/"])

    def wide_page(self, path: str) -> bytes | None:
        if path == "/":
            k = 0
        elif (m := re.match(r"^/w/(\d+)\.html$", path)) is not None and int(m.group(1)) < self.pages:
            k = int(m.group(1))
        else:
            return None
        return _page(f"Wide {k}", [f"/w/{(k * 7 + j) % self.pages}.html" for j in range(1, self.links + 1)])

    def tree_pages_within(self, depth: int) -> set[str]:
        """The tree's page paths no deeper than `depth`, calendar pages left out."""
        out = {"/"}
        for d in range(1, min(depth, self.depth) + 1):
            out |= {f"/d{d}/{k}.html" for k in range(self.fanout**d)}
        return out

    @staticmethod
    def depth_of(path: str) -> int | None:
        if path == "/":
            return 0
        m = DEPTH_RE.match(path)
        return int(m.group(1)) if m else None

    # -- serving ---------------------------------------------------------------------------------------------
    @property
    def tree(self) -> str:
        return f"http://{self.tree_host}:{self.port}/"

    @property
    def wide(self) -> str:
        return f"http://{self.wide_host}:{self.port}/"

    def hits_of(self, host: str) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.host == host]

    def _record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)
            if self._log is not None:
                with self._log.open("a", encoding="utf-8") as f:
                    f.write(f'{hit.host} "{hit.method} {hit.path}" {hit.status}\n')

    def _handler(self, host: str):
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._answer(body_too=True)

            def do_HEAD(self) -> None:
                self._answer(body_too=False)

            def _answer(self, *, body_too: bool) -> None:
                path = self.path
                body = web.tree_page(path) if host == web.tree_host else web.wide_page(path)
                status = 200 if body is not None else 404
                body = body if body is not None else b"not here"
                web._record(Hit(host, self.command, path, status))
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body_too:
                    self.wfile.write(body)

        return Handler

    def start(self) -> JobWeb:
        first = serve_in_thread(self.tree_host, 0, self._handler(self.tree_host), poll_interval=0.1)
        self.port = first.server_address[1]
        second = serve_in_thread(self.wide_host, self.port, self._handler(self.wide_host), poll_interval=0.1)
        self._servers = [first, second]
        return self

    def stop(self) -> None:
        for server in self._servers:
            server_stop(server)
        self._servers = []
