"""The embedded default end to end: `manage.py crawl` with SQLite and the in-process worker."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import pytest

from testweb import SiteSpec, TestWebServer

from .crawlcheck import UrlRow, assert_matches_web, clean_env, run_crawl


def read_rows(db: str) -> dict[str, UrlRow]:
    con = sqlite3.connect(db)
    try:
        loads = Counter(
            u for (u,) in con.execute("SELECT url_id FROM crawladmin_urlevent WHERE agent='load' AND from_state='init'")
        )
        return {
            url: UrlRow(url, state, reason, loads[pk])
            for pk, url, state, reason in con.execute("SELECT id, url, state, exclusion_reason FROM crawladmin_url")
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """One crawl of the standard test web, shared by the assertions below."""
    data = tmp_path_factory.mktemp("embedded")
    with TestWebServer(SiteSpec(first_octet=100)) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
        summary = run_crawl(env, *web.seeds())
        rows = read_rows(str(data / "crawladmin.sqlite3"))
        again = run_crawl(env)  # no seeds: resume from the database
        yield web, summary, rows, again, env


def test_every_reachable_page_visited_once_and_disallowed_never_requested(crawled):
    web, summary, rows, _, _ = crawled
    outcomes = assert_matches_web(rows, web)
    assert summary["stopped"] == "done"
    assert summary["states"]["visited"] == outcomes["visited"]
    assert summary["excluded"] == {"robots.txt": outcomes["excluded"]}


def test_silent_server_urls_are_noresponse1(crawled):
    web, _, rows, _, _ = crawled
    silent = [r for u, r in rows.items() if f"//{web.web.silent_host}:" in u]
    assert silent and all(r.state == "noresponse1" for r in silent)


def test_robots_fetched_once_per_server(crawled):
    web, _, _, _, _ = crawled
    robots = Counter(r.host for r in web.access_log() if r.path == "/robots.txt")
    answering = set(web.web.hosts()) - {web.web.silent_host}
    assert set(robots) == answering and set(robots.values()) == {1}


def test_summary_counts_checks_by_category(crawled):
    web, summary, _, _, _ = crawled
    requests = len(web.access_log())
    checks = summary["checks"]
    # Every request the test web answered is one check; each robots.txt attempt on the silent server
    # (one per batch of its URLs) is one more, a disconnect.
    assert checks["disconnect"] >= 1
    assert sum(checks.values()) == requests + checks["disconnect"]
    assert checks["error"] == sum(1 for r in web.access_log() if r.status >= 400)


def test_second_run_resumes_and_finds_nothing_to_do(crawled):
    _, summary, _, again, _ = crawled
    assert again["stopped"] == "done"
    assert again["loaded_this_run"] == 0
    assert again["states"] == summary["states"]


def test_unseen_site_of_three_servers(tmp_path):
    """A site the other tests never saw: three servers on other loopback IPs, a few hundred pages."""
    spec = SiteSpec(
        n_servers=3,
        pages_per_server=120,
        links_per_page=8,
        seed=20261126,
        first_octet=140,
        silent_server=False,
        slow_server=False,
    )
    with TestWebServer(spec) as web:
        summary = run_crawl(clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path)), web.seeds()[0])
        rows = read_rows(str(tmp_path / "crawladmin.sqlite3"))
        outcomes = assert_matches_web(rows, web, seeds=web.seeds()[:1])
    assert outcomes["visited"] >= 300
    assert summary["states"]["visited"] == outcomes["visited"]


def test_max_pages_stops_early_and_resume_finishes(tmp_path):
    spec = SiteSpec(n_servers=2, pages_per_server=40, first_octet=150, silent_server=False, slow_server=False)
    with TestWebServer(spec) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_BATCH_SIZE="5")
        first = run_crawl(env, "--max-pages", "10", *web.seeds())
        assert first["stopped"] == "max-pages"
        assert first["loaded_this_run"] == 10
        second = run_crawl(env)
        assert second["stopped"] == "done"
        rows = read_rows(str(tmp_path / "crawladmin.sqlite3"))
        assert_matches_web(rows, web)


def test_demo_crawls_the_test_web_and_prints_a_fresh_admin_password(tmp_path):
    """The README's first command, minus the web server at the end."""
    import subprocess
    import sys

    from .crawlcheck import ROOT

    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path))
    for var in ("CRAWL_ALLOW_PRIVATE", "CRAWL_DEFAULT_DELAY", "CRAWL_HEADER_TIMEOUT"):
        env.pop(var)  # the demo must work with no environment at all
    proc = subprocess.run(
        [sys.executable, "manage.py", "demo", "--no-serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "crawl done" in proc.stdout and "visited 182" in proc.stdout
    password = proc.stdout.split("password:", 1)[1].split()[0]
    con = sqlite3.connect(tmp_path / "crawladmin.sqlite3")
    (hashed,) = con.execute("SELECT password FROM auth_user WHERE username='admin'").fetchone()
    # The crawl page's parts have data from the first look: the crawl's history and the ranked pages.
    samples = con.execute("SELECT states FROM dashboard_crawlsample ORDER BY at").fetchall()
    (ranked,) = con.execute("SELECT count(*) FROM ranking_pagerank").fetchone()
    (visited,) = con.execute("SELECT count(*) FROM crawladmin_url WHERE state = 'visited'").fetchone()
    con.close()
    assert len(samples) >= 2 and json.loads(samples[-1][0])["visited"] == visited
    assert json.loads(samples[0][0])["visited"] < visited  # the first was taken as the crawl began
    assert ranked >= visited and "pages ranked" in proc.stdout
    assert password not in hashed and hashed.startswith("pbkdf2_")
    from django.contrib.auth.hashers import check_password

    assert check_password(password, hashed)
