"""Seed 003's page dedup end to end: a real crawl of a local web the other tests never
saw, where `/` and `/index.html` serve the same page (and a printer copy of another page), then `analyze
--json` and `rank` as a user runs them. The crawl treats copies as before (every URL known, fetched once,
Visited); the analyzer counts each page once and the ranking gives each page one rank. Embedded (SQLite),
and the same commands on PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing

import networkx as nx
import pytest

from testweb.cluster import postgres_database
from testweb.duplicates import DuplicateWeb

from .crawlcheck import ROOT, clean_env, run_crawl


def manage_json(env: dict[str, str], *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def query(database: str, sql: str) -> list[tuple]:
    if database.startswith("postgres"):
        import psycopg2

        with closing(psycopg2.connect(database)) as con, con.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    with closing(sqlite3.connect(database)) as con:
        return con.execute(sql).fetchall()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def crawled(request, tmp_path):
    """(web, env, database) after one crawl of the duplicate web from its home page."""
    with DuplicateWeb(variant=73 if request.param == "sqlite" else 74) as web:
        if request.param == "sqlite":
            env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path))
            summary = run_crawl(env, web.seed())
            yield web, env, str(tmp_path / "crawladmin.sqlite3"), summary
            return
        with postgres_database() as db:
            env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), DATABASE_URL=db, DJANGO_SECRET_KEY="test-only-" * 5)
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                           capture_output=True, timeout=300)
            summary = run_crawl(env, web.seed())
            yield web, env, db, summary


def test_copies_are_crawled_as_before_and_counted_and_ranked_once(crawled):
    web, env, db, summary = crawled
    # The crawl: every URL known, each fetched once, Visited; each copy marked as a duplicate of its page.
    states = dict(query(db, "SELECT url, state FROM crawladmin_url"))
    assert set(states) == web.urls()
    assert set(states.values()) == {"visited"}
    gets = Counter(path for method, path in web.requests if method == "GET")
    assert all(gets[path] == 1 for path in ("/", "/index.html", "/print/b.html", "/b.html"))
    assert summary["states"]["visited"] == len(web.urls())
    marked = dict(
        query(db, "SELECT u.url, o.url FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id"
                  " JOIN crawladmin_page q ON q.id = p.duplicate_of_id JOIN crawladmin_url o ON o.id = q.url_id")
    )
    assert marked == web.copies()

    # The analyzer: five pages, not seven; the copies are reported as left out.
    pages = len(web.urls()) - len(web.copies())
    report = manage_json(env, "analyze", "--no-progress", "--no-resolve")
    assert report["pages"] == {"stored": len(web.urls()), "analyzed": pages, "pending": 0, "duplicates": 2}
    assert report["languages"][0]["language"] == "en" and report["languages"][0]["pages"] == pages
    assert report["content_classes"][0]["pages"] == pages
    assert report["domains"][-1] == {"domain": "total", "pages": pages, "share": 1.0}
    assert report["homepages"]["root"] == 1

    # The ranking: one rank per page, none for a copy; the ranks are PageRank of the merged graph.
    summary = manage_json(env, "rank")
    assert summary["pages"] == pages and summary["duplicates_merged"] == 2
    assert summary["links"] == len(web.merged_links())
    ranks = dict(query(db, "SELECT u.url, r.rank FROM ranking_pagerank r JOIN crawladmin_url u ON u.id = r.url_id"))
    assert set(ranks) == web.urls() - set(web.copies())
    graph = nx.DiGraph(sorted(web.merged_links()))
    expected = nx.pagerank(graph, tol=1e-14, max_iter=10_000)
    assert ranks == pytest.approx(expected, abs=1e-6)
