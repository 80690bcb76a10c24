"""The long crawl's generated web (testweb/njsweb.js served by our own nginx) and its Python twin agree:
same bytes for the same URL, the links and answers the twin predicts, and a crawl's exact size."""

from __future__ import annotations

import http.client
import re
import shutil
import socket
import subprocess
import sys
from collections import Counter, deque

import pytest

from tests.conftest import skip_or_fail
from testweb.cluster import ROOT
from testweb.njsweb import ROBOTS_TXT, NjsWeb, NjsWebSpec, Twin, njs_available

SMALL = NjsWebSpec(servers=3, pages=400, port=8098)


def _crawl(twin: Twin) -> Counter:
    """A polite crawl of the twin from every home page: each fetched URL's status, robots-excluded URLs."""
    spec = twin.spec
    seen = {(s, "/") for s in range(spec.servers)}
    queue, found = deque(seen), Counter()
    while queue:
        s, path = queue.popleft()
        status, location = twin.answer(s, path)
        found[status] += 1
        if location is not None:
            t = next(i for i in range(spec.servers) if location.startswith(twin.origin(i) + "/"))
            nxt = [(t, location.removeprefix(twin.origin(t)))]
        elif status == 200:
            k = 0 if path == "/" else int(path.removeprefix("/p/"))
            nxt = twin.targets(s, k)
        else:
            nxt = []
        for url in nxt:
            if url in seen:
                continue
            seen.add(url)
            if url[1].startswith("/private/"):
                found["excluded"] += 1
            else:
                queue.append(url)
    return found


def test_the_twins_crawl_finds_exactly_what_the_spec_expects():
    for spec in (SMALL, NjsWebSpec(servers=1, pages=200, links=20, onsite=20), NjsWebSpec.for_pages(5000)):
        found, expected = _crawl(Twin(spec)), spec.expected()
        assert found[200] == expected["pages"] == spec.servers * spec.pages
        assert found[404] == expected["gone"] and found[301] == expected["moved"]
        assert found["excluded"] == expected["excluded"]
        assert expected["gone"] / expected["pages"] == pytest.approx(0.03, abs=0.005)
        assert expected["moved"] / expected["pages"] == pytest.approx(0.02, abs=0.005)


def test_every_page_has_its_links_distinct_and_every_page_is_within_reach_of_its_home():
    twin = Twin(SMALL)
    for s in range(SMALL.servers):
        for k in range(SMALL.pages):
            targets = twin.targets(s, k)
            assert len(set(targets)) == len(targets) and (s, twin.path(k)) not in targets
            ordinary = [t for t in targets if t[1] == "/" or t[1].startswith("/p/")]
            assert len(ordinary) == SMALL.links
            assert sum(t == s for t, _ in ordinary) == SMALL.onsite


def test_a_million_page_web_is_a_hundred_servers_of_ten_thousand():
    spec = NjsWebSpec.for_pages(1_000_000)
    assert (spec.servers, spec.pages) == (100, 10_000)
    assert NjsWebSpec.for_pages(50_000).servers == 100 and NjsWebSpec.for_pages(2_000).servers == 20


def _get(host: str, port: int, path: str) -> tuple[int, dict, bytes]:
    con = http.client.HTTPConnection(host, port, timeout=5)
    try:
        con.request("GET", path)
        r = con.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        con.close()


def _port_in_use(spec: NjsWebSpec) -> bool:
    try:
        with socket.create_connection((spec.hosts[0], spec.port), 0.2):
            return True
    except OSError:
        return False


@pytest.mark.integration
def test_nginx_serves_the_twins_web_the_same_bytes_each_time(tmp_path):
    if not njs_available():
        skip_or_fail("nginx's JavaScript module is not installed (apt-get install -y nginx libnginx-mod-http-js)")
    if _port_in_use(SMALL):
        pytest.fail(f"something listens on {SMALL.hosts[0]}:{SMALL.port}: wait and retry")
    twin = Twin(SMALL)
    sizes, langs = [], Counter()
    with NjsWeb(SMALL, tmp_path) as nginx:
        for s in range(SMALL.servers):
            host = SMALL.hosts[s]
            assert _get(host, SMALL.port, "/robots.txt")[2].decode() == ROBOTS_TXT
            for k in range(0, SMALL.pages, 7):
                path = twin.path(k)
                status, heads, body = _get(host, SMALL.port, path)
                assert status == 200 and heads["content-type"].startswith("text/html")
                assert _get(host, SMALL.port, path)[2] == body
                html = body.decode()
                assert re.findall(r'href="([^"]+)"', html) == twin.links(s, k)
                langs[re.search(r'<html lang="(\w+)"', html).group(1)] += 1
                sizes.append(len(body))
                for t, p in twin.targets(s, k):
                    if not p.startswith(("/gone/", "/moved/")):
                        continue
                    status, heads, _ = _get(SMALL.hosts[t], SMALL.port, p)
                    assert (status, heads.get("location")) == twin.answer(t, p)
            for path in ("/p/0", f"/p/{SMALL.pages}", "/p/07", "/moved/8", "/sitemap.xml", "/gone/5"):
                assert _get(host, SMALL.port, path)[0] == twin.answer(s, path)[0] == 404
        logged = nginx.requests_since(0)
    assert set(langs) == {"en", "de", "fr", "es"}
    assert 4_000 < min(sizes) and max(sizes) < 16_500 and 9_000 < sum(sizes) / len(sizes) < 11_500
    assert len(logged) > 3 * SMALL.pages / 7
    assert nginx.proc is not None and nginx.proc.poll() is not None  # stopped by its PID


@pytest.mark.integration
def test_a_small_long_crawl_fetches_every_page_once_through_the_whole_stack():
    """bench.longcrawl end to end on 2,000 pages: PostgreSQL, redis, workers, beat and the njs web."""
    if not njs_available() or shutil.which("redis-server") is None:
        skip_or_fail("nginx's JavaScript module or redis-server is not installed")
    spec = NjsWebSpec.for_pages(2000, port=8096)
    if _port_in_use(spec):
        pytest.fail(f"something listens on {spec.hosts[0]}:{spec.port}: wait and retry")
    cmd = [sys.executable, "-m", "bench.longcrawl", "--pages", "2000", "--port", "8096", "--no-wrk"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "checks: every page, 404 and redirect once" in proc.stdout
    assert proc.stdout.count("tenth ") >= 10
