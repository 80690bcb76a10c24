"""Seed 003's site dedup by IP end to end: a real crawl of two host names on one address and
port (testweb/vhosts.py), three times over. The later name's address is resolved when its server is created,
and its home page is fetched alone first and compared with the earlier site's: the same home page makes it an
alias before any of its other URLs is fetched; a different one (virtual hosting) leaves two sites, both
crawled whole; a home page that fails holds nothing up. Embedded (SQLite), and the same crawl on PostgreSQL."""

from __future__ import annotations

import subprocess
import sys

import pytest

from testweb.cluster import postgres_database
from testweb.vhosts import FIRST, LATER, VhostWeb

from .crawlcheck import ROOT, clean_env, run_crawl
from .test_seed003_crawl import query


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def crawled(request, tmp_path_factory):
    """(web, database) after one crawl from the first site's home page of each pair (one crawl for the module)."""
    tmp_path = tmp_path_factory.mktemp(f"vhosts-{request.param}")
    with VhostWeb() as web:
        if request.param == "sqlite":
            run_crawl(clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path)), *web.seeds())
            yield web, str(tmp_path / "crawladmin.sqlite3")
            return
        with postgres_database() as db:
            env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), DATABASE_URL=db, DJANGO_SECRET_KEY="test-only-" * 5)
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                           capture_output=True, timeout=300)  # fmt: skip
            run_crawl(env, *web.seeds())
            yield web, db


def _urls(db: str, web: VhostWeb, pair: str, host: str) -> dict[str, tuple[str, str]]:
    """URL -> (state, exclusion reason) of one host name's URLs."""
    prefix = web.url(pair, host, "/")
    rows = query(db, "SELECT url, state, exclusion_reason FROM crawladmin_url")
    return {url: (state, reason) for url, state, reason in rows if url.startswith(prefix)}


def _servers(db: str, web: VhostWeb, pair: str) -> dict[str, tuple[str | None, str | None]]:
    """host -> (address, host of the site it is an alias of) of the pair's two servers."""
    rows = query(
        db,
        "SELECT s.host, s.ip, t.host FROM crawladmin_server s LEFT JOIN crawladmin_server t ON t.id = s.alias_of_id"
        f" WHERE s.port = {web.ports[pair]}",
    )
    return {host: (ip, alias_of) for host, ip, alias_of in rows}


def test_a_second_name_serving_the_same_home_page_is_one_site_before_its_urls_are_fetched(crawled):
    web, db = crawled
    assert _servers(db, web, "same") == {FIRST: ("127.0.0.1", None), LATER: ("127.0.0.1", FIRST)}
    assert set(_urls(db, web, "same", FIRST).values()) == {("visited", "")}
    assert set(web.gets("same", FIRST)) == {"/robots.txt", "/", "/a.html", "/b.html", "/sitemap.xml"}
    # The later name: robots.txt and its home page (added by the crawler: no link names it), nothing else.
    assert web.gets("same", LATER) == ["/robots.txt", "/"]
    later = _urls(db, web, "same", LATER)
    home = web.url("same", LATER, "/")
    assert later.pop(home) == ("visited", "")
    reason = f"alias of {web.url('same', FIRST, '')}"
    assert web.url("same", LATER, "/b.html") in later
    assert set(later.values()) == {("init", reason)}


def test_two_sites_on_one_address_by_virtual_hosting_are_both_crawled_whole(crawled):
    web, db = crawled
    assert _servers(db, web, "vhost") == {FIRST: ("127.0.0.1", None), LATER: ("127.0.0.1", None)}
    for host in (FIRST, LATER):
        urls = _urls(db, web, "vhost", host)
        assert set(urls) == web.urls("vhost", host)
        assert set(urls.values()) == {("visited", "")}
        gets = web.gets("vhost", host)
        pages = [path for path in gets if path not in ("/robots.txt", "/sitemap.xml")]
        assert sorted(pages) == sorted(p.removeprefix(web.url("vhost", host, "")) for p in urls)  # each once
    # The later name's home page came first, alone: the comparison, before its other pages.
    assert web.gets("vhost", LATER)[:2] == ["/robots.txt", "/"]


def test_a_second_name_whose_home_page_fails_is_still_crawled(crawled):
    web, db = crawled
    assert _servers(db, web, "broken") == {FIRST: ("127.0.0.1", None), LATER: ("127.0.0.1", None)}
    urls = _urls(db, web, "broken", LATER)
    assert set(urls) == web.urls("broken", LATER)
    home = web.url("broken", LATER, "/")
    assert urls.pop(home) == ("noresponse1", "")
    assert set(urls.values()) == {("visited", "")}
    gets = web.gets("broken", LATER)
    assert gets[:2] == ["/robots.txt", "/"] and {"/b.html", "/c.html"} <= set(gets)
