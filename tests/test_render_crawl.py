"""Rendering end to end: an embedded crawl with real Chromium on a small web made for this test alone, where
some pages write their links with JavaScript and one page's script reaches for a private address outside
the allowed networks. `render: auto` finds what rendering every page finds, rendering fewer than half of
the pages; the private address gets no request; a dead link that only the rendered DOM has is reported."""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crawler.render import find_chromium
from testweb.serving import answer_handler, serve_in_thread

from .crawlcheck import ROOT, clean_env, run_crawl

pytestmark = pytest.mark.skipif(not find_chromium(), reason="no Chromium installed")

WEB_IP, SPY_IP = "127.0.0.41", "127.0.0.42"

TEXT = "This page is served as plain HTML and has enough words on it to be read without a browser. " * 4


class JsWeb:
    """A generated site: plain pages, and a few whose links exist only once their scripts ran (to pages
    nothing else links, to a missing page), one of whose scripts also asks the spy's private address."""

    def __init__(self, seed: int, spy_origin: str) -> None:
        rng = random.Random(seed)
        self.spy = spy_origin
        n_plain = rng.randint(9, 12)
        self.plain = [f"/p{i}-{rng.randint(100, 999)}.html" for i in range(n_plain)]
        self.js = [f"/app{i}-{rng.randint(100, 999)}" for i in range(3)]
        self.hidden = [f"/hidden{i}-{rng.randint(100, 999)}.html" for i in range(3)]  # linked only by scripts
        self.gone = f"/gone-{rng.randint(1000, 9999)}.html"  # 404, linked only by a script
        self.pages: dict[str, str] = {}
        self.pages["/"] = self._plain("Home", [*self.plain[:4], self.js[0]])
        for i, path in enumerate(self.plain):
            links = [self.plain[(i + 1) % n_plain], rng.choice(self.plain)]
            links += [self.js[(i % 2) + 1]] if i in (2, 5) else []
            self.pages[path] = self._plain(f"Page {i}", links)
        for path in self.hidden:
            self.pages[path] = self._plain("Hidden", [self.plain[0]])
        # Three ways of building links in the browser: an empty mount element filled by a script file; links
        # written by an inline script; a <noscript> notice.
        self.pages[self.js[0]] = (
            '<html><head><title>Shell</title></head><body><div id="root"></div>'
            '<script src="/static/app0.js"></script></body></html>'
        )
        self.scripts = {
            "/static/app0.js": self._writer([self.hidden[0], self.plain[1]], spy=True),
        }
        self.pages[self.js[1]] = (
            f"<html><head><title>Inline</title></head><body><h1>Inline</h1><p>{TEXT}</p><ul id=list></ul><script>"
            + self._writer([self.hidden[1], self.gone], spy=False)
            + "</script></body></html>"
        )
        self.pages[self.js[2]] = (
            "<html><head><title>Noscript</title></head><body><noscript>Please enable JavaScript to use this"
            f' site.</noscript><p>{TEXT}</p><div id=list></div><script src="/static/app2.js"></script></body></html>'
        )
        self.scripts["/static/app2.js"] = self._writer([self.hidden[2]], spy=False)

    def _plain(self, title: str, links: list[str]) -> str:
        anchors = " ".join(f'<a href="{href}">{href}</a>' for href in links)
        # An analytics-like inline script, as many plain pages have: no reason to render.
        return (
            f"<html><head><title>{title}</title><script>window.dataLayer = window.dataLayer || [];</script></head>"
            f"<body><h1>{title}</h1><p>{TEXT}</p><nav>{anchors}</nav></body></html>"
        )

    def _writer(self, links: list[str], *, spy: bool) -> str:
        code = "".join(
            f"(function(){{var a=document.createElement('a');a.href={href!r};a.textContent='go';"
            "(document.getElementById('root')||document.getElementById('list')||document.body).appendChild(a);})();"
            for href in links
        )
        if spy:
            # The rendered title and a word only the script writes: what search finds of the page.
            code += "document.title='Shell rendered';var p=document.createElement('p');p.textContent='quokkaberry';"
            code += "document.body.appendChild(p);"
            code += f"new Image().src={self.spy + '/pixel.png'!r};fetch({self.spy + '/api'!r}).catch(function(){{}});"
        return code

    def answer(self, path: str) -> tuple[int, str, bytes]:
        path = path.split("?")[0]
        if path in self.pages:
            return 200, "text/html; charset=utf-8", self.pages[path].encode()
        if path in self.scripts:
            return 200, "application/javascript", self.scripts[path].encode()
        if path == "/robots.txt":
            return 200, "text/plain", b"User-agent: *\nDisallow:\n"
        return 404, "text/html", b"<html><body>not here</body></html>"


def _serve(ip: str, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    return serve_in_thread(ip, 0, handler)


@pytest.fixture(scope="module")
def crawls(tmp_path_factory) -> Iterator[dict]:
    spy_hits: list[str] = []

    class Spy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            spy_hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    spy = _serve(SPY_IP, Spy)
    seed = random.SystemRandom().randrange(1 << 30)
    web = JsWeb(seed, f"http://{SPY_IP}:{spy.server_address[1]}")

    site = _serve(WEB_IP, answer_handler(web.answer))
    origin = f"http://{WEB_IP}:{site.server_address[1]}"
    out: dict = {"web": web, "origin": origin, "spy": spy_hits, "seed": seed}
    try:
        for mode in ("auto", "always"):
            data = tmp_path_factory.mktemp(f"render-{mode}")
            env = clean_env(
                CRAWLADMIN_DATA_DIR=str(data),
                CRAWL_SCOPE="host",
                # Only the site's own address is allowed: the spy's is a private address outside it.
                CRAWL_ALLOW_PRIVATE=f"{WEB_IP}/32",
                CRAWL_RENDER=mode,
                CRAWL_RENDER_SETTLE_MS="300",
                CRAWL_RENDER_PAGE_SECONDS="15",
                CRAWL_SERVER_CONCURRENCY="2",
            )
            summary = run_crawl(env, origin + "/", timeout=150)
            out[mode] = {"env": env, "db": str(data / "crawladmin.sqlite3"), "summary": summary}
        yield out
    finally:
        for server in (site, spy):
            server.shutdown()
            server.server_close()


def _query(db: str, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _urls(db: str) -> set[str]:
    return {u for (u,) in _query(db, "SELECT url FROM crawladmin_url")}


def test_auto_finds_every_page_a_full_render_finds(crawls):
    web, origin = crawls["web"], crawls["origin"]
    auto, full = _urls(crawls["auto"]["db"]), _urls(crawls["always"]["db"])
    assert full <= auto, f"seed {crawls['seed']}: missing {sorted(full - auto)}"
    # Which is more than the raw HTML gives: the pages only scripts link to, and the dead one.
    for path in [*web.hidden, web.gone]:
        assert origin + path in auto, f"seed {crawls['seed']}: {path} not found"
    visited = {u for (u,) in _query(crawls["auto"]["db"], "SELECT url FROM crawladmin_url WHERE state='visited'")}
    assert {origin + p for p in web.hidden} <= visited


def test_auto_renders_fewer_than_half_of_the_pages_and_says_why(crawls):
    rows = _query(
        crawls["auto"]["db"],
        "SELECT u.url, p.render_reason, p.rendered_at IS NOT NULL, p.dom_z IS NOT NULL FROM crawladmin_page p"
        " JOIN crawladmin_url u ON u.id = p.url_id WHERE p.content_type LIKE 'text/html%'",
    )
    rendered = [(url, reason) for url, reason, done, dom in rows if done and dom]
    assert rendered and len(rendered) < len(rows) / 2, (crawls["seed"], rendered, len(rows))
    origin, web = crawls["origin"], crawls["web"]
    reasons = dict(rendered)
    assert {origin + p for p in web.js} <= set(reasons), reasons
    assert reasons[origin + web.js[0]] == "empty_mount"
    assert reasons[origin + web.js[2]] == "noscript"
    # The full render rendered every page.
    full = _query(crawls["always"]["db"], "SELECT count(*), sum(rendered_at IS NOT NULL) FROM crawladmin_page"
                  " WHERE content_type LIKE 'text/html%'")  # fmt: skip
    assert full[0][0] == full[0][1]


def test_the_private_address_gets_no_request(crawls):
    assert crawls["spy"] == []


def test_the_rendered_title_and_text_are_the_pages_and_searchable(crawls):
    origin, web = crawls["origin"], crawls["web"]
    (title,) = _query(
        crawls["auto"]["db"],
        "SELECT p.title FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id"
        f" WHERE u.url = '{origin}{web.js[0]}'",
    )[0]
    assert title == "Shell rendered"
    proc = subprocess.run(
        [sys.executable, "manage.py", "search", "--json", "quokkaberry"],
        cwd=ROOT, env=crawls["auto"]["env"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [hit["url"] for hit in json.loads(proc.stdout)["results"]] == [origin + web.js[0]]


def test_a_dead_link_only_in_the_rendered_dom_is_reported(crawls):
    env, origin, web = crawls["auto"]["env"], crawls["origin"], crawls["web"]
    proc = subprocess.run(
        [sys.executable, "manage.py", "dead_links"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {(r["source_url"], r["target_url"]) for r in csv.DictReader(io.StringIO(proc.stdout))}
    assert (origin + web.js[1], origin + web.gone) in rows, sorted(rows)


def test_the_archive_holds_the_raw_response_and_the_rendered_dom(crawls, tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    origin, web = crawls["origin"], crawls["web"]
    out = tmp_path / "crawl.warc.gz"
    proc = subprocess.run(
        [sys.executable, "manage.py", "export_warc", str(out)],
        cwd=ROOT, env=crawls["auto"]["env"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records: dict[str, list[tuple[str, bytes, dict]]] = {}
    for path in sorted(tmp_path.glob("crawl*.warc.gz")):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                headers = dict(rec.rec_headers.headers)
                records.setdefault(uri, []).append((rec.rec_type, rec.content_stream().read(), headers))
    shell = {kind: (body, headers) for kind, body, headers in records[origin + web.js[0]]}
    assert b"quokkaberry" not in shell["response"][0] and b'<div id="root"></div>' in shell["response"][0]
    dom, headers = shell["conversion"]
    assert b"quokkaberry" in dom and web.hidden[0].encode() in dom
    assert headers["WARC-Render-Reason"] == "empty_mount" and headers["WARC-Refers-To"]
    # A page that was not rendered has no conversion.
    assert "conversion" not in {kind for kind, _, _ in records[origin + "/"]}
