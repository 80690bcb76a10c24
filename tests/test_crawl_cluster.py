"""The cluster mode end to end: PostgreSQL, Redis, a `celery worker` on load and one on extract, beat
with the database scheduler, and `manage.py crawl` watching. Same web, same expected counts as the
embedded crawl."""

from __future__ import annotations

from collections import Counter

import psycopg2
import pytest

from testweb import SiteSpec, TestWebServer, Web
from testweb.cluster import Processes, manage, postgres_database, redis_server

from .crawlcheck import UrlRow, assert_matches_web, clean_env, run_crawl

pytestmark = pytest.mark.integration


def read_rows(database_url: str) -> dict[str, UrlRow]:
    con = psycopg2.connect(database_url)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT url_id FROM crawladmin_urlevent WHERE agent='load' AND from_state='init'")
            loads = Counter(pk for (pk,) in cur.fetchall())
            cur.execute("SELECT id, url, state, exclusion_reason FROM crawladmin_url")
            return {url: UrlRow(url, state, reason, loads[pk]) for pk, url, state, reason in cur.fetchall()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def cluster_crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    with postgres_database() as db, redis_server(tmp) as broker, TestWebServer(SiteSpec(first_octet=170)) as web:
        env = clean_env(
            DATABASE_URL=db,
            CELERY_BROKER_URL=broker,
            DJANGO_SECRET_KEY="integration-test-only-" * 3,
            CRAWLADMIN_DATA_DIR=str(tmp),
        )
        manage(env, "migrate", "--noinput")
        with Processes(env, tmp) as procs:
            procs.worker("load", "load", concurrency=4)
            procs.worker("extract", "extract,housekeeping", concurrency=2)
            procs.start("beat", "beat", "-l", "WARNING", "-s", str(tmp / "beat-schedule"))
            # --dispatch-only: this command seeds and watches; beat's database schedule dispatches.
            summary = run_crawl(env, "--dispatch-only", *web.seeds(), timeout=240)
            again = run_crawl(env, "--dispatch-only", timeout=120)
        yield web, summary, again, read_rows(db), procs


def test_cluster_crawl_matches_the_test_web(cluster_crawl):
    web, summary, _, rows, _ = cluster_crawl
    outcomes = assert_matches_web(rows, web)
    assert summary["mode"] == "cluster"
    assert summary["stopped"] == "done"
    assert summary["states"]["visited"] == outcomes["visited"]
    assert summary["states"]["noresponse1"] == outcomes["failed"]
    assert summary["excluded"] == {"robots.txt": outcomes["excluded"]}


def test_cluster_counts_equal_the_embedded_expectation(cluster_crawl):
    """The embedded test checks the same SiteSpec (other IPs) against the same expected() model."""
    _, summary, _, _, _ = cluster_crawl
    expected = Counter(Web(SiteSpec(first_octet=100), port=8000).expected().values())
    assert summary["states"]["visited"] == expected["visited"]
    assert summary["states"]["noresponse1"] == expected["failed"]


def test_cluster_resume_finds_nothing_to_do(cluster_crawl):
    _, summary, again, _, _ = cluster_crawl
    assert again["stopped"] == "done" and again["loaded_this_run"] == 0
    assert again["states"] == summary["states"]


def test_workers_logged_no_errors(cluster_crawl):
    *_, procs = cluster_crawl
    for name in ("load", "extract"):
        log = procs.log(name)
        assert "Traceback" not in log, log[-3000:]
