"""Politeness, crawler numbers and dedup with real processes: three load workers with crawler numbers
1, 2 and 3, four extract workers, PostgreSQL and Redis. The test web asks for a Crawl-delay."""

from __future__ import annotations

from collections import defaultdict

import psycopg2
import pytest

from testweb import SiteSpec, TestWebServer
from testweb.cluster import Processes, manage, postgres_database, redis_server

from .crawlcheck import assert_matches_web, clean_env, run_crawl
from .test_crawl_cluster import read_rows

pytestmark = pytest.mark.integration

CRAWL_DELAY = 0.4
SPEC = SiteSpec(
    n_servers=6, pages_per_server=25, crawl_delay=CRAWL_DELAY, first_octet=180, silent_server=False, slow_server=False
)
PINNED = 2


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("politeness")
    with postgres_database() as db, redis_server(tmp) as broker, TestWebServer(SPEC) as web:
        env = clean_env(
            DATABASE_URL=db,
            CELERY_BROKER_URL=broker,
            DJANGO_SECRET_KEY="test-only-" * 5,
            CRAWLADMIN_DATA_DIR=str(tmp),
            CRAWL_BATCH_SIZE="10",
        )
        manage(env, "migrate", "--noinput")
        pinned_hosts = web.web.normal_hosts()[:2]
        # Pin two servers to crawler 2, as an operator does with import_servers (or in the admin).
        servers_csv = tmp / "servers.csv"
        servers_csv.write_text("".join(f"http://{h}:{web.port}/,pinned,{PINNED}\n" for h in pinned_hosts))
        manage(env, "import_servers", "--trusted", str(servers_csv))
        with Processes(env, tmp) as procs:
            for num in (1, 2, 3):
                procs.start(
                    f"load{num}",
                    "worker",
                    "-Q",
                    "load",
                    "-P",
                    "threads",
                    "-c",
                    "3",
                    "-n",
                    f"load{num}@%h",
                    "--without-heartbeat",
                    "--without-mingle",
                    "--without-gossip",
                    "-l",
                    "WARNING",
                    env={**env, "CRAWLER_NUM": str(num)},
                )
            for n in range(4):
                queues = "extract,housekeeping" if n == 0 else "extract"
                procs.worker(f"extract{n}", queues, concurrency=1, pool="solo")
            summary = run_crawl(env, *web.seeds(), timeout=240)
        con = psycopg2.connect(db)
        with con.cursor() as cur:
            cur.execute(
                "SELECT s.host, c.crawler_num FROM crawladmin_statuscheck c "
                "JOIN crawladmin_server s ON s.id = c.server_id"
            )
            checks = cur.fetchall()
            cur.execute("SELECT count(*), count(DISTINCT url), count(DISTINCT url_hash) FROM crawladmin_url")
            url_counts = cur.fetchone()
            cur.execute("SELECT count(*), count(DISTINCT (from_url_id, to_url_id)) FROM crawladmin_link")
            link_counts = cur.fetchone()
        con.close()
        yield web, summary, read_rows(db), checks, url_counts, link_counts, pinned_hosts


def test_crawl_is_complete(crawl):
    web, summary, rows, *_ = crawl
    assert summary["stopped"] == "done"
    assert_matches_web(rows, web)


def test_never_two_requests_at_once_nor_closer_than_the_crawl_delay(crawl):
    web, *_ = crawl
    by_host = defaultdict(list)
    for rec in web.access_log():
        by_host[rec.host].append(rec)
    assert len(by_host) == SPEC.n_servers
    # The cluster spaces its *turns* exactly; what the test web logs is when its handler thread ran,
    # which on a loaded 2-core machine can lag the client's send by tens of milliseconds either way.
    # A real violation (two workers granted one turn) shows as a gap near zero, far below this slack;
    # the median check below catches spacing that is short across the board.
    slack = CRAWL_DELAY / 2
    gaps: list[float] = []
    for host, recs in by_host.items():
        recs.sort(key=lambda r: r.started)
        for before, after in zip(recs, recs[1:], strict=False):
            assert after.started >= before.time - slack, f"{host}: overlapping requests {before.path} {after.path}"
            gap = after.started - before.started
            gaps.append(gap)
            assert gap >= CRAWL_DELAY - slack, f"{host}: {after.path} started {gap:.3f}s after {before.path}"
    gaps.sort()
    assert gaps[len(gaps) // 2] >= CRAWL_DELAY - 0.01, "spacing is systematically short of the crawl delay"


def test_pinned_servers_are_fetched_only_by_their_crawler_number(crawl):
    *_, checks, _, _, pinned_hosts = crawl
    pinned = {num for host, num in checks if host in pinned_hosts}
    assert pinned == {PINNED}
    others = {num for host, num in checks if host not in pinned_hosts}
    assert others <= {1, 2, 3} and None not in others


def test_four_extract_workers_create_no_duplicate_rows(crawl):
    *_, url_counts, link_counts, _ = crawl
    total, distinct_urls, distinct_hashes = url_counts
    assert total == distinct_urls == distinct_hashes
    assert link_counts[0] == link_counts[1]
