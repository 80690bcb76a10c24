"""The browser pool (crawler.render) with the system's Chromium: every request goes to the handler, a refused
one reaches nobody, a hung page is killed within its bound and the next page gets a new browser, browsers are
replaced after their pages, and nothing (cookies) is carried from one page to the next."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crawler.render import HANG_MARGIN, Answer, RenderBounds, RenderFailed, RenderPool, find_chromium

pytestmark = pytest.mark.skipif(not find_chromium(), reason="no Chromium installed")

SPY_IP = "127.0.0.43"


@pytest.fixture(scope="module")
def spy():
    hits: list[str] = []

    class Spy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer((SPY_IP, 0), Spy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://{SPY_IP}:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def pool():
    pool = RenderPool(find_chromium(), RenderBounds(page_seconds=3, pages_per_browser=3, settle_ms=200))
    yield pool
    pool.close()


def _site(pages: dict[str, str], seen: list) -> callable:
    def handler(sub):
        seen.append(sub)
        path = "/" + sub.url.split("/", 3)[3] if sub.url.count("/") >= 3 else "/"
        if sub.url.startswith("http://site.test/") and path in pages:
            ctype = "text/javascript" if path.endswith(".js") else "text/html"
            return Answer(200, {"content-type": ctype}, pages[path].encode())
        return "refused"

    return handler


def test_script_written_links_are_in_the_dom_and_every_request_went_to_the_handler(pool, spy):
    origin, hits = spy
    seen: list = []
    pages = {
        "/": '<title>T</title><div id="root"></div><script src="/app.js"></script>',
        "/app.js": "document.getElementById('root').innerHTML = '<a href=\"/made-by-script\">x</a>';"
        f"new Image().src = '{origin}/pixel.png'; fetch('{origin}/api'); navigator.sendBeacon('{origin}/b', 'x');"
        f"try {{ new WebSocket('{origin.replace('http', 'ws')}/ws'); }} catch (e) {{}}",
    }
    rendered = pool.render("http://site.test/", _site(pages, seen))
    assert '<a href="/made-by-script">x</a>' in rendered.html and rendered.title == "T"
    assert [s.url for s in seen][:2] == ["http://site.test/", "http://site.test/app.js"]
    assert seen[0].main and seen[0].navigation and not seen[1].main
    asked = {s.url for s in seen}
    assert f"{origin}/api" in asked and f"{origin}/pixel.png" in asked
    time.sleep(0.3)
    assert hits == []  # refused by the handler, or closed (the WebSocket): nothing reached the spy


def test_no_cookie_is_carried_from_one_page_to_the_next(pool):
    seen: list = []
    pages = {"/": "<script>document.cookie = 'who=first; path=/'; fetch('/check.js');</script>", "/check.js": ""}
    pool.render("http://site.test/", _site(pages, seen))
    assert any("who=first" in s.headers.get("cookie", "") for s in seen if s.url.endswith("/check.js"))
    seen.clear()
    pool.render("http://site.test/", _site({"/": "<script>fetch('/check.js')</script>", "/check.js": ""}, seen))
    assert [s for s in seen if s.url.endswith("/check.js")]
    assert not any("cookie" in s.headers for s in seen)


def test_a_hung_page_is_killed_within_its_bound_and_the_next_page_renders(pool):
    started = time.monotonic()
    with pytest.raises(RenderFailed):
        pool.render("http://site.test/", _site({"/": "<script>while (true) {}</script>"}, []))
    assert time.monotonic() - started < pool.bounds.page_seconds + HANG_MARGIN + 10
    rendered = pool.render("http://site.test/", _site({"/": "<title>after</title>"}, []))
    assert rendered.title == "after"


def test_a_browser_is_replaced_after_its_pages(pool):
    worker = pool._workers[0]
    pids = set()
    for _ in range(pool.bounds.pages_per_browser + 1):
        pool.render("http://site.test/", _site({"/": "<title>x</title>"}, []))
        pids.add(worker.browser.pid if worker.browser is not None else None)
    assert len(pids) >= 2


def test_a_document_with_no_answer_fails_like_a_fetch():
    pool = RenderPool(find_chromium(), RenderBounds(page_seconds=3))
    try:
        with pytest.raises(RenderFailed):
            pool.render("http://site.test/", lambda sub: "no response: refused")
    finally:
        pool.close()
