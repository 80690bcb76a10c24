"""Random header names, header values, status lines and bodies go through the
whole path — fetch, clean, record, move, store — in an embedded crawl on SQLite and on PostgreSQL. Whatever
the bytes, the crawl ends, every URL ends classified, and none is requested more than a bounded number of
times (one fetch, plus at most a resend on a dead keep-alive connection and the retry of a failing batch).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testweb.ports import free_port

from .crawlcheck import ROOT, clean_env, run_crawl
from .test_poison_crawl import RawServer, _html

HOST = "127.0.0.65"
MAX_REQUESTS_PER_URL = 3
CLASSIFIED = {"visited", "noresponse1", "noresponse2", "dead"}

_header = st.tuples(
    st.binary(min_size=1, max_size=24).filter(lambda b: b"\r" not in b and b"\n" not in b and b":" not in b),
    st.binary(max_size=200).filter(lambda b: b"\r" not in b and b"\n" not in b),
)
_status = st.one_of(
    st.sampled_from([b"200 OK", b"200 O\x00K", b"404 Not Found", b"500 Oops", b"301 Moved", b"200", b"999 X"]),
    st.binary(min_size=1, max_size=20).filter(lambda b: b"\r" not in b and b"\n" not in b),
)
_response = st.tuples(_status, st.lists(_header, max_size=6), st.binary(max_size=3000))
_web = st.lists(_response, min_size=1, max_size=6)


def _raw(status: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return b"HTTP/1.1 " + status + b"\r\n" + lines + b"Connection: close\r\n\r\n" + body


def _crawl(responses, env: dict[str, str], rows_of) -> None:
    port = free_port(HOST)
    paths = [f"/r{i}" for i in range(len(responses))]
    routes = {"/": _raw(b"200 OK", [(b"Content-Type", b"text/html")], _html(*paths)), "/robots.txt": b""}
    routes["/robots.txt"] = _raw(b"404 Not Found", [], b"")
    routes.update({path: _raw(*response) for path, response in zip(paths, responses, strict=True)})
    server = RawServer(HOST, routes, port)
    server.start()
    try:
        summary = run_crawl(env, f"http://{HOST}:{port}/", timeout=120)
    finally:
        server.stop()
    assert summary["stopped"] == "done", summary
    rows = rows_of()
    assert len(rows) == len(paths) + 1, rows
    for url, (state, reason) in rows.items():
        assert state in CLASSIFIED or reason, (url, state)
    worst = server.hits.most_common(1)[0]
    assert worst[1] <= MAX_REQUESTS_PER_URL, server.hits


_ENV = dict(
    CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
    CRAWL_CONNECT_TIMEOUT="1",
    CRAWL_HEADER_TIMEOUT="1",
    CRAWL_BODY_TIMEOUT="1",
    CRAWL_MAX_DEPTH="1",
)
# Each example is a whole crawl (a process, a few seconds): few of them, no example database in the tree.
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


@settings(max_examples=4, **_SETTINGS)
@given(responses=_web)
def test_random_responses_are_classified_on_sqlite(tmp_path_factory, responses):
    data = tmp_path_factory.mktemp("poison-sqlite")
    env = clean_env(CRAWLADMIN_DATA_DIR=str(data), **_ENV)

    def rows_of():
        con = sqlite3.connect(data / "crawladmin.sqlite3")
        try:
            return {u: (s, r) for u, s, r in con.execute("SELECT url, state, exclusion_reason FROM crawladmin_url")}
        finally:
            con.close()

    _crawl(responses, env, rows_of)


@pytest.fixture(scope="module")
def migrated_pg(tmp_path_factory):
    """One migrated PostgreSQL database for every example; each example empties the crawl's tables."""
    from testweb.cluster import postgres_database

    with postgres_database() as url:  # no PostgreSQL: skipped locally, a failure in CI (conftest)
        env = clean_env(
            CRAWLADMIN_DATA_DIR=str(tmp_path_factory.mktemp("poison-pg")),
            DATABASE_URL=url,
            DJANGO_SECRET_KEY="poison-test-" + "k" * 40,
            **_ENV,
        )
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        yield url, env


@pytest.mark.integration
@settings(max_examples=3, **_SETTINGS)
@given(responses=_web)
def test_random_responses_are_classified_on_postgresql(migrated_pg, responses):
    import psycopg2

    url, env = migrated_pg
    with psycopg2.connect(url) as con, con.cursor() as cur:
        cur.execute(
            "TRUNCATE crawladmin_urlevent, crawladmin_statuscheck, crawladmin_link, crawladmin_page,"
            " crawladmin_url, crawladmin_serverlease, crawladmin_server CASCADE"
        )

    def rows_of():
        with psycopg2.connect(url) as con, con.cursor() as cur:
            cur.execute("SELECT url, state, exclusion_reason FROM crawladmin_url")
            return {u: (s, r) for u, s, r in cur.fetchall()}

    _crawl(responses, env, rows_of)
