"""A small local web for search end to end, made afresh for each run: its search word and its Korean word
are drawn at random, so no test or index has seen them before.

One site on 127.0.<variant>.1: a home page linked from every page; six filler pages; two HTML pages with
the word (one linked from every filler page, one from a single page); a PDF with the word, whose link leads
to a page nothing else links to; a Korean page with the Korean word inside a longer run of Hangul; and two
broken links, one on the home page (the most-linked page) and one on a filler page.
"""

from __future__ import annotations

import html
import random
import string
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testweb.serving import ServedWeb, serve_in_thread, server_stop

from .pdfs import make_pdf

FILLER = (
    "This page tells visitors about the departments, the library opening hours and the campus map. "
    "Students find the timetable, the forms for each semester and the contacts of every office here."
)


def _page(title: str, body: str) -> bytes:
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
        f"<body>{body}</body></html>"
    ).encode()


class SearchWeb(ServedWeb):
    __test__ = False

    def __init__(self, variant: int = 71, *, seed: int | None = None) -> None:
        rng = random.Random(seed)
        # A made-up word: consonant-vowel pairs, no English ending a stemmer would cut.
        self.word = "".join(rng.choice("bdfgkmpvz") + rng.choice("aiou") for _ in range(4)) + "x"
        # Two Hangul syllables (a two-syllable Korean word), set inside a longer run on its page.
        self.korean = "".join(chr(0xAC00 + rng.randrange(11172)) for _ in range(2))
        self.host = f"127.0.{variant}.1"
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self.token = "".join(rng.choice(string.ascii_lowercase) for _ in range(6))

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def seeds(self) -> list[str]:
        return [f"{self.origin}/"]

    # What a search must find, and where the broken links are.
    def with_word(self) -> set[str]:
        return {f"{self.origin}{p}" for p in ("/popular", "/quiet", "/doc.pdf")}

    @property
    def most_linked_with_word(self) -> str:
        return f"{self.origin}/popular"

    @property
    def korean_page(self) -> str:
        return f"{self.origin}/ko"

    @property
    def broken_on_home(self) -> tuple[str, str]:
        return f"{self.origin}/", f"{self.origin}/old-news"

    def _routes(self) -> dict[str, tuple[int, str, bytes]]:
        text = "text/html; charset=utf-8"
        fillers = [f"/p{n}" for n in range(1, 7)]
        home = _page(
            "Home",
            f"<h1>Welcome</h1><p>{FILLER}</p>"
            + "".join(f'<a href="{p}">Section {n}</a> ' for n, p in enumerate(fillers, 1))
            + '<a href="/popular">Notices</a> <a href="/doc.pdf">Guide (PDF)</a> <a href="/ko">한국어</a> '
            '<a href="/old-news">Old news</a>',
        )
        with_word = f"<p>{FILLER} The {self.word} office opens in spring.</p>"
        routes: dict[str, tuple[int, str, bytes]] = {
            "/": (200, text, home),
            "/popular": (200, text, _page("Notices", with_word + '<a href="/">Home</a>')),
            "/quiet": (200, text, _page("Archive", with_word + '<a href="/">Home</a>')),
            "/ko": (200, text, _page("안내", f"<p>서울{self.korean}교에서 공부하는 학생들을 위한 안내입니다.</p>")),
            "/from-pdf": (200, text, _page("Linked from the guide", f"<p>{FILLER}</p><a href=\"/\">Home</a>")),
            "/doc.pdf": (
                200,
                "application/pdf",
                make_pdf([f"{FILLER} The {self.word} office opens in spring."], links=["/from-pdf"], title="Guide"),
            ),
        }
        for n, path in enumerate(fillers, 1):
            extra = '<a href="/quiet">Archive</a> <a href="/removed">Removed page</a>' if n == 6 else ""
            routes[path] = (
                200, text, _page(f"Section {n}", f"<p>{FILLER}</p><a href=\"/\">Home</a> "
                                 f"<a href=\"/popular\">Notices</a> {extra}"),
            )  # fmt: skip
        return routes

    def start(self) -> SearchWeb:
        routes = self._routes()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                status, kind, body = routes.get(self.path, (404, "text/html", _page("Not found", "")))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(body)

            do_HEAD = do_GET

        self._server = serve_in_thread(self.host, 0, Handler)
        self.port = self._server.server_address[1]
        return self

    def stop(self) -> None:
        server_stop(self._server)
