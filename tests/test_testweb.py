"""Tests of the local test web (testweb): model determinism and live servers."""
from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest
import requests

from testweb import SiteSpec, TestWebServer, Web, canonical_url
from testweb.__main__ import main

# High octets keep clear of other suites' servers (default 10..) running in parallel.
SPEC = SiteSpec(n_servers=3, pages_per_server=12, first_octet=200, slow_delay=0.3, slow_pages=2)


@pytest.fixture(scope="module")
def tw():
    with TestWebServer(SPEC) as server:
        yield server


@pytest.fixture()
def session():
    with requests.Session() as s:
        s.headers["User-Agent"] = "crawladmin-test"
        yield s


def _all_paths(web: Web) -> list[tuple[str, str]]:
    """(host, path?query) of every URL the model says is reachable."""
    out = []
    for url in web.expected():
        parts = urlsplit(url)
        out.append((parts.hostname, parts.path + ("?" + parts.query if parts.query else "")))
    return out


# ------------------------------------------------------------------ the model
def test_same_spec_gives_identical_bodies():
    a, b = Web(SiteSpec(), 8000), Web(SiteSpec(), 8000)
    assert a.expected() == b.expected()
    for host, path in _all_paths(a):
        if a.is_silent(host):
            continue
        assert a.response(host, path, "GET") == b.response(host, path, "GET")


def test_different_seeds_differ():
    a, b = Web(SiteSpec(seed=1), 8000), Web(SiteSpec(seed=2), 8000)
    bodies_a = [a.response(h, "/p/3.html", "GET")[2] for h in a.normal_hosts()]
    bodies_b = [b.response(h, "/p/3.html", "GET")[2] for h in b.normal_hosts()]
    assert bodies_a != bodies_b


def test_expected_default_spec_breakdown():
    web = Web(SiteSpec(), 8000)
    exp = web.expected()
    counts = Counter(exp.values())
    # 5 servers x (home + 30 pages + old + loop-a + loop-b + list) + changing + slow (home + 5)
    assert counts["visited"] == 5 * 35 + 1 + 6
    assert counts["excluded"] == 5 * 3          # /private/0..2.html on each server
    assert counts["failed"] == 5 + 3            # /missing.html per server + 3 silent URLs
    for url, outcome in exp.items():
        assert url == canonical_url(url) and "#" not in url
        if "/private/" in url:
            assert outcome == "excluded"
    # Both query orders are linked, only the sorted form is reported.
    assert "http://127.0.0.10:8000/list?a=1&b=2" in exp
    assert not any("b=2&a=1" in u for u in exp)


def test_links_use_mixed_forms():
    web = Web(SiteSpec(), 8000)
    html = b"".join(web.response(h, f"/p/{k}.html", "GET")[2]
                    for h in web.normal_hosts() for k in range(30)).decode()
    assert 'href="http://127.0.0.' in html       # absolute
    assert 'href="/p/' in html                   # root-relative
    assert 'href="1' in html or 'href="2' in html  # relative
    assert "#section-" in html
    assert "b=2&amp;a=1" in html and "a=1&amp;b=2" in html


def test_canonical_url():
    assert canonical_url("HTTP://127.0.0.10:80/list?b=2&a=1#x") == "http://127.0.0.10:80/list?a=1&b=2"
    assert canonical_url("http://127.0.0.10:8000") == "http://127.0.0.10:8000/"


# ---------------------------------------------------------------- live servers
def test_expected_visited_urls_answer_over_http(tw, session):
    exp = tw.web.expected()
    for url, outcome in exp.items():
        if outcome == "visited" and not url.startswith(f"http://{tw.web.slow_host}"):
            r = session.get(url, allow_redirects=False, timeout=5)
            assert 200 <= r.status_code < 400, url
        elif outcome == "failed" and not tw.web.is_silent(urlsplit(url).hostname):
            assert session.get(url, timeout=5).status_code >= 400, url


def test_private_pages_excluded_but_exist(tw, session):
    exp = tw.web.expected()
    private = [u for u, o in exp.items() if o == "excluded"]
    assert private and all("/private/" in u for u in private)
    assert session.get(private[0], timeout=5).status_code == 200
    robots = session.get(tw.seeds()[0] + "robots.txt", timeout=5)
    assert robots.text == "User-agent: *\nDisallow: /private/\n"


def test_silent_server_accepts_but_never_answers(tw):
    with socket.create_connection((tw.web.silent_host, tw.port), timeout=2) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1)


def test_slow_server_takes_at_least_slow_delay(tw, session):
    url = f"http://{tw.web.slow_host}:{tw.port}/s/0.html"
    start = time.monotonic()
    r = session.get(url, timeout=5)
    assert r.status_code == 200
    assert time.monotonic() - start >= SPEC.slow_delay


def test_change_changes_etag_and_body(tw, session):
    url = f"{tw.seeds()[0]}changing.html"
    before = session.get(url, timeout=5)
    tw.change(url)
    after = session.get(url, timeout=5)
    assert before.headers["ETag"] != after.headers["ETag"]
    assert before.headers["Last-Modified"] != after.headers["Last-Modified"]
    assert before.content != after.content
    # Conditional GET with the new validator -> 304.
    again = session.get(url, headers={"If-None-Match": after.headers["ETag"]}, timeout=5)
    assert again.status_code == 304 and again.content == b""


def test_head_returns_headers_without_body(tw, session):
    url = tw.seeds()[1] + "p/2.html"
    get = session.get(url, timeout=5)
    head = session.head(url, timeout=5)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == str(len(get.content))
    assert head.headers["Content-Type"] == "text/html; charset=utf-8"
    assert head.headers["ETag"] == get.headers["ETag"]
    # Keep-alive survived the HEAD: the same session still works.
    assert session.get(url, timeout=5).content == get.content


def test_redirects(tw, session):
    home = tw.seeds()[0]
    r = session.get(home + "old.html", allow_redirects=False, timeout=5)
    assert r.status_code == 301 and r.headers["Location"] == home + "p/0.html"
    with pytest.raises(requests.TooManyRedirects):
        session.get(home + "loop-a", timeout=5)


def test_access_log_records_requests(tw, session):
    path = "/p/5.html?probe=1"
    url = f"http://{tw.web.normal_hosts()[2]}:{tw.port}{path}"
    session.get(url, timeout=5)
    session.head(url, timeout=5)
    session.get(f"http://{tw.web.normal_hosts()[2]}:{tw.port}/nope", timeout=5)
    recs = tw.requests_for(url)
    assert [(r.method, r.path, r.status) for r in recs] == [("GET", path, 200), ("HEAD", path, 200)]
    assert recs[0].bytes > 0 and recs[1].bytes == 0
    assert recs[0].user_agent == "crawladmin-test" and recs[0].client.startswith("127.")
    assert tw.access_log()[-1].status == 404


def test_log_file_and_stop_frees_port(tmp_path):
    log = tmp_path / "access.log"
    spec = SiteSpec(n_servers=2, pages_per_server=3, first_octet=220, silent_server=True, slow_server=False)
    server = TestWebServer(spec, log_path=str(log)).start()
    port = server.port
    with requests.Session() as s:   # keep-alive connection still open at stop()
        s.get(server.seeds()[0], timeout=5)
        held = socket.create_connection((server.web.silent_host, port), timeout=2)
        started = time.monotonic()
        server.stop()
        server.stop()  # idempotent
        assert time.monotonic() - started < 2
        held.close()
    ours = {f"testweb-{h}" for h in server.web.hosts()}
    assert not [t for t in threading.enumerate() if t.name in ours]
    assert '"GET / HTTP/1.1" 200' in log.read_text()
    with TestWebServer(spec, port=port) as again:
        assert again.port == port
        assert requests.get(again.seeds()[1], timeout=5).status_code == 200


def test_cli_main_serves_until_stopped(capsys):
    stop = threading.Event()
    rc: list[int] = []
    t = threading.Thread(target=lambda: rc.append(main(
        ["--port", "0", "--servers", "2", "--pages", "3", "--first-octet", "230", "--no-slow"],
        stop_event=stop)))
    t.start()
    try:
        out = ""
        deadline = time.monotonic() + 5
        while "crawl with:" not in out and time.monotonic() < deadline:
            time.sleep(0.05)
            out += capsys.readouterr().out
    finally:
        stop.set()
        t.join(5)
    assert rc == [0]
    assert "http://127.0.0.230:" in out and "CRAWL_ALLOW_PRIVATE=127.0.0.0/8" in out
