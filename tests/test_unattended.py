"""A crawl left running unattended: no single input holds up what waits behind it.

One embedded crawl (`manage.py crawl`, a subprocess, as an operator runs it) of a local web of single hostile
inputs (testweb/unattended.py): a server where one URL answers 503 with Retry-After and every other 200,
reached by a name that resolves at once; a page of one tag with 100,000 attributes; a page of one tag with
480,000 attributes whose names start with a quote; a page of 50,000 links;
links to 300 names whose lookups never answer (testweb/fakedns); a body that trickles. Every other page is
fetched, each hostile input is classified, and the crawl ends by itself, well before its --max-seconds.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler import notfollowed
from crawler.parse import MAX_LINKS, MAX_LINKS_RECORDED
from testweb.unattended import HANG_SUFFIX, LINKS, PAGES, UnattendedWeb

from .crawlcheck import ROOT, clean_env

pytestmark = [pytest.mark.unattended, pytest.mark.slow]

HANGING = 300
MAX_SECONDS = 300  # a net: the crawl must end by itself ("done") long before
QUICK = "quick.test"  # the 503 server's name, resolved at once


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    data = tmp_path_factory.mktemp("unattended")
    with UnattendedWeb(first=160, retry_after=2, hanging=HANGING) as web:
        env = clean_env(
            CRAWLADMIN_DATA_DIR=str(data),
            CRAWL_DNS_TIMEOUT="1",
            CRAWL_BATCH_SIZE="100",  # the 5,000 robots-disallowed links are set aside 100 a claim
            PYTHONPATH=str(ROOT / "testweb" / "fakedns"),
            FAKEDNS_HANG=HANG_SUFFIX,
            FAKEDNS_MAP=f"{QUICK}={web.ips['retry']}",
        )
        seeds = [f"http://{QUICK}:{web.port('retry')}/", web.url("heavy", "/"), web.url("slow", "/")]
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "manage.py", "crawl", "--json", "--no-progress", "--threads", "16",
             "--max-seconds", str(MAX_SECONDS), *seeds],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=MAX_SECONDS + 120,
        )  # fmt: skip
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr[-4000:]
        unextracted[web] = _unextracted(data / "crawladmin.sqlite3")
        yield web, json.loads(proc.stdout), _rows(data / "crawladmin.sqlite3"), took


unextracted: dict = {}  # the crawl's web -> its pages left unextracted when the crawl ended


def _unextracted(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM crawladmin_page WHERE extracted_at IS NULL").fetchone()[0]
    finally:
        con.close()


def _rows(db: Path) -> dict[str, tuple[str, str, str, int]]:
    con = sqlite3.connect(db)
    try:
        query = "SELECT url, state, failure_kind, exclusion_reason, failure_count FROM crawladmin_url"
        return {url: (state, kind, reason, count) for url, state, kind, reason, count in con.execute(query)}
    finally:
        con.close()


def test_the_crawl_ends_by_itself_on_time(crawl):
    _web, summary, _rows, took = crawl
    assert summary["stopped"] == "done"
    assert took < MAX_SECONDS


def test_the_503_url_moves_on_and_every_other_url_of_its_server_is_fetched(crawl):
    web, _summary, rows, _took = crawl
    fetched = web.fetched("retry")
    assert {f"/p{i}" for i in range(PAGES)} <= {p for p, statuses in fetched.items() if 200 in statuses}
    assert fetched["/busy"] == [503]  # asked once, not after every pause
    origin = f"http://{QUICK}:{web.port('retry')}"
    state, kind, _reason, count = rows[f"{origin}/busy"]
    assert (state, kind, count) == ("noresponse1", "http_status", 1)
    assert {rows[f"{origin}/p{i}"][0] for i in range(PAGES)} == {"visited"}


def test_the_page_of_100000_attributes_is_classified_and_its_links_followed(crawl):
    web, _summary, rows, _took = crawl
    assert rows[web.url("heavy", "/attributes")][:2] == ("visited", "parse:attributes")
    fetched = web.fetched("heavy")
    for path in ("/before-attributes", "/after-attributes", "/after-1", "/after-2"):
        assert fetched.get(path) == [200], path


def test_the_page_of_quote_named_attributes_is_classified_and_nothing_is_left_unextracted(crawl):
    web, _summary, rows, _took = crawl
    assert rows[web.url("heavy", "/quote-attributes")][:2] == ("visited", "parse:attributes")
    fetched = web.fetched("heavy")
    for path in ("/before-quote-attributes", "/after-quote-attributes"):
        assert fetched.get(path) == [200], path
    assert unextracted[web] == 0


def test_links_past_the_bound_are_set_aside_and_counted_not_followed(crawl):
    web, summary, rows, _took = crawl
    assert rows[web.url("heavy", "/links")][:2] == ("visited", "parse:links")
    site = web.ips["heavy"]
    # Past the links followed, the next MAX_LINKS_RECORDED are recorded; the rest of the 50,000 only counted.
    assert summary["not_followed"][site][notfollowed.TOO_MANY_LINKS] == min(LINKS - MAX_LINKS, MAX_LINKS_RECORDED)
    assert summary["not_followed"][site][notfollowed.ROBOTS] >= MAX_LINKS
    assert not [p for p in web.fetched("heavy") if p.startswith("/private/")]


def test_hanging_names_fail_as_dns_and_the_name_that_resolves_is_fetched(crawl):
    web, _summary, rows, _took = crawl
    hanging = {url: row for url, row in rows.items() if HANG_SUFFIX in url}
    assert len(hanging) == HANGING
    assert {(state, kind) for state, kind, _reason, _count in hanging.values()} == {("noresponse1", "dns")}
    quick = [row for url, row in rows.items() if f"//{QUICK}:" in url]
    assert len(quick) == PAGES + 2 and not [row for row in quick if row[1] == "dns"]


def test_the_trickle_ends_at_its_body_deadline(crawl):
    web, _summary, rows, _took = crawl
    assert rows[web.url("slow", "/trickle")][:2] == ("noresponse1", "body_timeout")
