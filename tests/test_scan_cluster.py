"""The scans in the cluster mode: PostgreSQL, Redis, `celery worker` processes for load, extract,
active_scan and inactive_scan, and `manage.py crawl` dispatching and running the sweeps, against the
local test web."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import timedelta

import psycopg2
import pytest

from testweb import SiteSpec, TestWebServer
from testweb.cluster import Processes, manage, postgres_database, redis_server

from .crawlcheck import ROOT, clean_env, run_crawl

pytestmark = pytest.mark.integration

NR1, NR2 = 2, 3  # seconds: a failing URL is dead within a few sweeps
PAGES = "SELECT u.url, p.checksum FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id"


@contextmanager
def cluster(tmp, **extra: str):
    """A fresh database, a private Redis, and one worker process per agent."""
    with postgres_database() as db, redis_server(tmp) as broker:
        secret = "integration-test-only-" * 3
        env = clean_env(
            DATABASE_URL=db, CELERY_BROKER_URL=broker, DJANGO_SECRET_KEY=secret, CRAWLADMIN_DATA_DIR=str(tmp)
        )
        env.update(extra)
        manage(env, "migrate", "--noinput")
        with Processes(env, tmp) as procs:
            procs.worker("load", "load", concurrency=4)
            procs.worker("extract", "extract,housekeeping", concurrency=2)
            procs.worker("active", "active_scan", concurrency=2)
            procs.worker("inactive", "inactive_scan", concurrency=2)
            yield env, db, procs
        for name in ("load", "extract", "active", "inactive"):
            assert "Traceback" not in procs.log(name), procs.log(name)[-3000:]


def query(db: str, sql: str, *args) -> list[tuple]:
    con = psycopg2.connect(db)
    try:
        with con.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall()
    finally:
        con.close()


def url_states(db: str) -> dict[str, tuple[str, str, str]]:
    rows = query(db, "SELECT url, state, exclusion_reason, failure_kind FROM crawladmin_url")
    return {url: (state, reason, kind) for url, state, reason, kind in rows}


def moves(db: str) -> dict[str, list[tuple]]:
    """Every URL's life-cycle moves in order: (from, to, agent, at)."""
    rows = query(
        db,
        "SELECT u.url, e.from_state, e.to_state, e.agent, e.at FROM crawladmin_urlevent e "
        "JOIN crawladmin_url u ON u.id = e.url_id ORDER BY e.id",
    )
    out: dict[str, list[tuple]] = defaultdict(list)
    for url, *move in rows:
        out[url].append(tuple(move))
    return out


def test_servers_that_stop_answering_walk_to_dead_while_the_rest_is_crawled(tmp_path):
    spec = SiteSpec(n_servers=6, pages_per_server=16, first_octet=140, silent_server=False, slow_server=False)
    # A server whose answers fail is paced slower (its delay doubles, up to CRAWL_MAX_DELAY: the host health):
    # capped here like the URLs' own back-offs, so that its failing URLs walk on within the test.
    backoffs = dict(CRAWL_NR1_BACKOFF=str(NR1), CRAWL_NR2_BACKOFF=str(NR2), CRAWL_DEFAULT_DELAY="0.02",
                    CRAWL_MAX_DELAY="0.1")  # fmt: skip
    with TestWebServer(spec) as web, cluster(tmp_path, **backoffs) as (env, db, _):
        down = set(web.web.normal_hosts()[::3])  # a third of the servers
        command = [sys.executable, "manage.py", "crawl", "--json", "--no-progress", *web.seeds()]
        crawl = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while query(db, "SELECT count(*) FROM crawladmin_url WHERE state = 'visited'")[0][0] < 20:
                assert time.monotonic() < deadline and crawl.poll() is None, "the crawl did not get going"
                time.sleep(0.05)
            for host in down:
                web.set_down(host)
            out, err = crawl.communicate(timeout=75)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait(10)
        assert crawl.returncode == 0, err[-3000:]
        summary = json.loads(out)
        expected = web.web.expected()
        states, history = url_states(db), moves(db)

    assert summary["stopped"] == "done"
    on_down = {u: s for u, s in states.items() if any(f"//{h}:" in u for h in down)}
    dead = [u for u, (state, _, _) in on_down.items() if state == "dead"]
    assert dead, "no URL of a stopped server reached Dead"
    # Loaded before it stopped, or dead now (robots.txt exclusions apart: they were never requested).
    assert {state for state, reason, _ in on_down.values() if not reason} <= {"visited", "dead"}, on_down
    for url in dead:
        assert states[url][2] == "reset"  # the failure kind: the connection closed without an answer
        load, to_nr2, to_dead = history[url][-3:]
        assert load[:3] in {("init", "noresponse1", "load"), ("visited", "noresponse1", "active_scan")}
        assert to_nr2[:3] == ("noresponse1", "noresponse2", "inactive_scan")
        assert to_dead[:3] == ("noresponse2", "dead", "inactive_scan")
        # On schedule: each re-check waited out its back-off.
        assert to_nr2[3] - load[3] >= timedelta(seconds=NR1)
        assert to_dead[3] - to_nr2[3] >= timedelta(seconds=NR2)

    # The live servers were crawled to completion, each page once; their broken links walked to Dead too.
    gets = Counter(web.url_of(r) for r in web.access_log() if r.method == "GET")
    live = {u: o for u, o in expected.items() if not any(f"//{h}:" in u for h in down)}
    for url, outcome in live.items():
        state, reason, _ = states[url]
        if outcome == "excluded":
            assert reason == "robots.txt" and gets[url] == 0, url
        else:
            assert (state, reason) == ({"visited": "visited", "failed": "dead"}[outcome], ""), url
        if outcome == "visited":
            assert gets[url] == 1, f"{url} requested {gets[url]} times"


def test_active_scan_reloads_the_changed_pages_and_only_those(tmp_path):
    spec = SiteSpec(n_servers=3, pages_per_server=12, first_octet=150, silent_server=False, slow_server=False)
    with TestWebServer(spec) as web, cluster(tmp_path) as (env, db, _):
        first = run_crawl(env, *web.seeds(), timeout=60)
        assert first["stopped"] == "done"
        hosts = web.web.normal_hosts()
        changed = {web.web.url(hosts[0], "/changing.html"), web.web.url(hosts[1], "/p/3.html"), web.seeds()[2]}
        for url in changed:
            web.change(url)
        checksums = dict(query(db, PAGES))
        visited = {u for u, (state, _, _) in url_states(db).items() if state == "visited"}
        assert changed <= visited
        mark = len(web.access_log())

        # One active-scan round, everything due (CRAWL_REVISIT_AFTER=0), as beat's sweep would send it;
        # then the crawl command (default revisit time: it sweeps nothing more) waits for the scans and
        # dispatches the reloads.
        sweep = "from crawlcore.services.sweep import scan_sweep; from crawler.lifecycle import Agent; "
        sweep += "print(scan_sweep(agent=Agent.ACTIVE_SCAN))"
        sent = manage({**env, "CRAWL_REVISIT_AFTER": "0"}, "shell", "-c", sweep)
        assert int(sent.stdout.split()[-1]) == len(visited)
        # (The scan task dispatches the reloads itself; they may be done before this crawl starts.)
        assert run_crawl(env, timeout=60)["stopped"] == "done"
        log = web.access_log()[mark:]
        after = dict(query(db, PAGES))
        history, states = moves(db), url_states(db)

    heads = Counter(web.url_of(r) for r in log if r.method == "HEAD")
    gets = Counter(web.url_of(r) for r in log if r.method == "GET")
    assert heads == Counter(visited)  # every visited URL re-checked once, by HEAD
    assert gets == Counter(changed)  # only the changed pages fetched again
    for url in visited:
        if url in changed:
            assert after[url] != checksums[url]
            assert [m[:3] for m in history[url][-2:]] == [
                ("visited", "init", "active_scan"),
                ("init", "visited", "load"),
            ]
        else:
            assert after.get(url) == checksums.get(url)
            assert history[url][-1][:3] == ("visited", "visited", "active_scan")
    # Nothing left half-way (robots.txt exclusions stay Init, 404s NoResponse1: not due in this test).
    assert {state for state, reason, _ in states.values() if not reason} == {"visited", "noresponse1"}
