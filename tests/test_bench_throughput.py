"""The throughput benchmark's pieces (testweb.generated, bench.throughput), on a tiny web: 2 servers × 20 pages.
The benchmark itself is not a test; these check that the web it crawls is what it claims to be."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from bench.throughput import (
    FK_CHECK,
    check_ours,
    check_scrapy,
    parse_workers,
    pg_rows_split,
    pg_statements,
    worker_ended,
)
from testweb.generated import ROBOTS_TXT, NginxWeb, Web, WebSpec, ensure_written, find_nginx
from testweb.ports import free_port

from .conftest import skip_or_fail

TINY = WebSpec(servers=2, pages=20, links=15, onsite=0.8, page_bytes=3000, private=2, net="127.0.9", port=18099)


class _Hrefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def _links_in(path: Path, page_url: str) -> list[str]:
    parser = _Hrefs()
    parser.feed(path.read_text())
    return [urljoin(page_url, h) for h in parser.hrefs]


def _file_of(root: Path, url: str) -> Path:
    parts = urlsplit(url)
    return root / parts.hostname / ("index.html" if parts.path == "/" else parts.path.lstrip("/"))


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def tiny_web(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("web") / "www"
    assert ensure_written(root, TINY) is not None
    return root


def test_generated_web_is_deterministic(tiny_web, tmp_path):
    again = tmp_path / "again"
    ensure_written(again, TINY)
    assert _digest(again) == _digest(tiny_web)
    other = tmp_path / "other"
    ensure_written(other, WebSpec(**{**TINY.__dict__, "seed": TINY.seed + 1}))
    assert _digest(other) != _digest(tiny_web)


def test_same_manifest_is_reused_and_another_refused(tiny_web):
    assert ensure_written(tiny_web, TINY) is None  # reused as it is
    with pytest.raises(SystemExit, match="another web"):
        ensure_written(tiny_web, WebSpec(**{**TINY.__dict__, "pages": 21}))


def test_every_page_has_the_links_and_onsite_share_asked_for(tiny_web):
    web = Web(TINY)
    for s in range(TINY.servers):
        for k in range(TINY.pages):
            url = web.url(s, k)
            links = _links_in(_file_of(tiny_web, url), url)
            assert len(links) == len(set(links)) == TINY.links, url
            assert url not in links
            onsite = [u for u in links if urlsplit(u).hostname == web.hosts[s]]
            assert len(onsite) == round(TINY.links * TINY.onsite), url
            size = _file_of(tiny_web, url).stat().st_size
            assert 0.8 * TINY.page_bytes < size < 1.25 * TINY.page_bytes, (url, size)


def test_every_page_is_reachable_from_the_home_pages_and_private_ones_are_linked(tiny_web):
    """Breadth-first over the written files themselves (not the model), not entering /private/."""
    web = Web(TINY)
    seen = set(web.seeds())
    todo = list(seen)
    private = set()
    while todo:
        url = todo.pop()
        for link in _links_in(_file_of(tiny_web, url), url):
            if urlsplit(link).path.startswith("/private/"):
                private.add(link)
            elif link not in seen:
                seen.add(link)
                todo.append(link)
    assert seen == {web.url(s, k) for s in range(TINY.servers) for k in range(TINY.pages)}
    assert len(private) == web.expected()["excluded"] > 0
    for link in private:
        assert _file_of(tiny_web, link).exists()  # there to be fetched: only robots.txt keeps crawlers out
    for host in web.hosts:
        assert (tiny_web / host / "robots.txt").read_text() == ROBOTS_TXT


def test_expected_counts_match_the_files(tiny_web):
    web = Web(TINY)
    expected = web.expected()
    assert expected["pages"] == len(list(tiny_web.glob("*/index.html"))) + len(list(tiny_web.glob("*/p/*.html")))
    assert expected["links"] == TINY.servers * TINY.pages * TINY.links
    assert expected["robots"] == TINY.servers


def test_worker_layout_option():
    workers = parse_workers("load:threads:40,extract+housekeeping:prefork:2")
    assert [(w.queues, w.pool, w.concurrency) for w in workers] == [
        ("load", "threads", 40),
        ("extract,housekeeping", "prefork", 2),
    ]
    with pytest.raises(Exception, match="no worker consumes housekeeping"):
        parse_workers("load:threads:4,extract:prefork:2")
    with pytest.raises(Exception, match="QUEUES:POOL:N"):
        parse_workers("load:threads")


def _ours_result(**found) -> dict:
    base = {"visited": 40, "pages": 40, "urls": {"visited": 40, "excluded: robots.txt": 2}, "links": 600}
    base.update(unextracted=0, unindexed=0, without_vector=0, leased=0, checks=44)
    base.update(found)
    requests = {"requests": 44, "pages": 40, "robots": 2, "sitemaps": 2, "repeated": 0, "private": 0}
    return {"stopped": "done", "found": base, "requests": requests, "log_errors": {"w0-load": 0}}


def test_a_crawl_that_matches_the_web_passes_and_a_short_one_is_reported():
    expected = Web(TINY).expected()
    assert check_ours(_ours_result(), expected) == []
    problems = check_ours(_ours_result(links=599, checks=43), expected)
    assert any(p.startswith("Link rows: 599") for p in problems)
    assert any(p.startswith("StatusCheck rows vs nginx requests") for p in problems)
    no_sitemap = _ours_result()
    no_sitemap["requests"]["sitemaps"] = 0
    assert any(p.startswith("sitemap requests (one per server): 0") for p in check_ours(no_sitemap, expected))
    # Every page indexed: none waiting for its vector, none without one (unless SEARCH_INDEX is off).
    unindexed = check_ours(_ours_result(unindexed=3, without_vector=3), expected)
    assert unindexed == ["pages waiting for their search vector: 3 (expected 0)",
                         "pages without a search vector: 3 (expected 0)"]  # fmt: skip
    assert check_ours({**_ours_result(without_vector=40), "search_index": False}, expected) == []
    scrapy = {"stopped": "finished", "pages": 40, "items": 40, "requests": {**_ours_result()["requests"], "private": 1}}
    assert check_scrapy(scrapy, expected) == ["requests of /private/ (robots.txt disallows): 1 (expected 0)"]


@pytest.mark.integration
def test_nginx_serves_the_generated_web(tmp_path):
    if find_nginx() is None:
        skip_or_fail("nginx is not installed (apt-get install -y nginx-light)")
    spec = WebSpec(**{**TINY.__dict__, "port": free_port("127.0.9.1")})
    www = tmp_path / "www"
    ensure_written(www, spec)
    web = Web(spec)
    run = tmp_path / "nginx"
    run.mkdir()
    with NginxWeb(www, spec, run) as nginx:
        for s in range(spec.servers):
            with urllib.request.urlopen(web.url(s, 0), timeout=5) as r:
                assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
                assert r.read() == web.render(s, 0)
            with urllib.request.urlopen(web.origin(s) + "/robots.txt", timeout=5) as r:
                assert r.read().decode() == ROBOTS_TXT
        with urllib.request.urlopen(web.url(1, 7), timeout=5) as r:
            assert r.read() == (www / web.hosts[1] / "p" / "7.html").read_bytes()
        logged = nginx.requests_since(0)
    assert [(a, m, p, st) for a, m, p, st, _ua in logged][-1] == (web.hosts[1], "GET", "/p/7.html", 200)
    assert len(logged) == 2 * spec.servers + 1
    assert nginx.proc is not None and nginx.proc.poll() is not None  # stopped by its PID


def test_statements_are_counted_by_verb_and_table_and_fk_checks_apart():
    no_wait = "WITH no_wait AS (SELECT set_config($1, $2, $3)) INSERT INTO crawladmin_statuscheck (a) SELECT 1"
    fk = 'SELECT $2 FROM ONLY "public"."crawladmin_url" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x'
    tables = {"crawladmin_url": 0, "crawladmin_urlevent": 0, "crawladmin_statuscheck": 0, "crawladmin_page": 0}
    before = {"statements": {(1, "INSERT INTO crawladmin_urlevent (a) VALUES ($1)"): (10, 10)}, "tables": tables}
    after = {
        "tables": tables,
        "statements": {
            # A table whose name starts with another's is still itself.
            (1, "INSERT INTO crawladmin_urlevent (a) VALUES ($1)"): (14, 40),
            (2, 'INSERT INTO "crawladmin_url" (a) VALUES ($1)'): (3, 30),
            (3, no_wait): (5, 5),
            (
                4,
                "WITH v AS (SELECT 1), c AS (UPDATE crawladmin_statuscheck SET a = v.a FROM v), p AS (INSERT INTO "
                "crawladmin_page (a) SELECT 1 ON CONFLICT (url_id) DO UPDATE SET a = excluded.a) SELECT 1",
            ): (2, 0),
            (5, fk): (7, 7),
            (6, "COMMIT"): (4, 0),
            (7, "BEGIN"): (4, 0),
            (8, "SELECT pg_try_advisory_lock($1)"): (1, 1),
            (9, "SELECT 1 FROM crawladmin_page"): (0, 0),  # not called in between: left out
        },
    }
    got = pg_statements(before, after)
    assert got == {
        f"{FK_CHECK} url": (7, 7),
        "transaction control (BEGIN/COMMIT/SAVEPOINT/RELEASE/ROLLBACK)": (8, 0),
        "INSERT statuscheck": (5, 5),
        "INSERT urlevent": (4, 30),
        "INSERT url": (3, 30),
        "one statement: UPDATE statuscheck + INSERT page": (2, 0),
        "SELECT pg_try_advisory_lock($1)": (1, 1),
    }
    assert pg_statements(before, {**after, "statements": None}) is None


def test_rows_are_split_into_inserts_updates_and_deletes_per_table():
    before = {"tables_split": {"crawladmin_url": (1, 2, 0), "crawladmin_link": (5, 0, 0)}}
    after = {"tables_split": {"crawladmin_url": (4, 8, 1), "crawladmin_link": (5, 0, 0), "crawladmin_page": (2, 2, 0)}}
    assert pg_rows_split(before, after) == {"page": (2, 2, 0), "url": (3, 6, 1)}


def test_a_worker_that_dies_during_the_crawl_is_named_with_how_it_ended():
    """A worker killed by a signal stays a zombie of the benchmark until reaped: the crawl would wait for it
    until --max-seconds (a --profile run's load worker, a segfault of CPython's frame walk, 29 Nov)."""
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    crashed = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    quit_ = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    try:
        deadline = time.monotonic() + 20
        while not worker_ended({"w1-extract": crashed.pid}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker_ended({"w0-load": alive.pid}) == ""
        said = worker_ended({"w0-load": alive.pid, "w1-extract": crashed.pid})
        assert said == f"w1-extract (pid {crashed.pid}) ended: killed by SIGSEGV"
        while not worker_ended({"w2": quit_.pid}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker_ended({"w2": quit_.pid}) == f"w2 (pid {quit_.pid}) ended: exit code 3"
        quit_.wait(timeout=20)  # reaped: its state is gone, and so is its exit code
        assert worker_ended({"w2": quit_.pid}) == f"w2 (pid {quit_.pid}) ended"
    finally:
        alive.kill()
        for p in (alive, crashed, quit_):
            p.wait(timeout=20)
