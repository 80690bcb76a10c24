"""Link reports end to end: crawl a local web whose links break in every way, then
`dead_links --format csv` must list exactly the broken links the web's own manifest names."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.brokenlinks import neutralised
from testweb.links import LinkWeb

from .crawlcheck import ROOT, clean_env, run_crawl

COLUMNS = [
    "site", "owner", "source_url", "anchor_text", "element", "target_url", "status", "failure_kind",
    "redirect_chain", "first_broken_at", "last_checked_at",
]  # fmt: skip


def manage(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    data = tmp_path_factory.mktemp("links")
    with LinkWeb(61) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data), CRAWL_SCOPE="any")
        summary = run_crawl(env, *web.seeds())
        yield web, env, summary


def test_csv_lists_exactly_the_manifest(crawled):
    web, env, _ = crawled
    text = manage(env, "dead_links", "--format", "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == COLUMNS
    got = sorted((r[2], r[3], r[5]) for r in rows[1:])
    want = sorted((b.source, neutralised(b.anchor_text), b.target) for b in web.manifest())
    assert got == want


def test_formula_prefixes_are_neutralised_and_chains_shown(crawled):
    web, env, _ = crawled
    rows = {(r["source_url"], r["target_url"]): r for r in csv.DictReader(io.StringIO(manage(env, "dead_links")))}
    o = web.origin
    assert rows[(f"{o}/", f"{o}/formula")]["anchor_text"].startswith("'=")
    assert rows[(f"{o}/about", f"{o}/missing")]["anchor_text"] == "'-1 points"
    moved = rows[(f"{o}/", f"{o}/moved")]
    assert (moved["status"], moved["redirect_chain"]) == ("404", f"{o}/moved [301] -> {o}/missing [404]")
    assert rows[(f"{o}/", f"{o}/away")]["redirect_chain"].startswith(f"{o}/away [302] -> http://{web.dead_host}")
    anchor = rows[(f"{o}/", f"{o}/about#nowhere")]  # the target as the link writes it, fragment and all
    assert (anchor["failure_kind"], anchor["redirect_chain"]) == ("missing anchor", "")
    assert rows[(f"{o}/", f"{o}/img/broken.png")]["element"] == "img src"
    assert rows[(f"{o}/", f"{o}/missing")]["element"] == "a href"
    assert all(r["first_broken_at"] for r in rows.values())


def test_json_export_and_filters(crawled, tmp_path):
    web, env, _ = crawled
    out = tmp_path / "dead.json"
    manage(env, "dead_links", "--format", "json", "--site", web.host, "-o", str(out))
    rows = json.loads(out.read_text())
    assert len(rows) == len(web.manifest()) - 0 and list(rows[0]) == COLUMNS
    assert json.loads(manage(env, "dead_links", "--format", "json", "--site", web.origin)) == rows  # as the dashboard
    assert json.loads(manage(env, "dead_links", "--format", "json", "--since", "2999-01-01")) == []


def test_resources_are_checked_with_head_not_stored(crawled):
    web, env, _ = crawled
    requests = set(web.requests)
    assert ("HEAD", "/img/logo.png") in requests and ("GET", "/img/logo.png") not in requests
    assert ("HEAD", "/img/broken.png") in requests and ("GET", "/img/broken.png") not in requests
    assert {("HEAD", "/style.css"), ("GET", "/style.css")} <= requests  # HEAD refused (405): then a GET
    assert ("GET", "/") in requests and ("GET", "/about") in requests
    con = sqlite3.connect(Path(env["CRAWLADMIN_DATA_DIR"]) / "crawladmin.sqlite3")
    try:
        stored = {
            u for (u,) in con.execute("SELECT u.url FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id")
        }
        resources = {u for (u,) in con.execute("SELECT url FROM crawladmin_url WHERE resource")}
    finally:
        con.close()
    o = web.origin
    assert resources == {f"{o}/img/logo.png", f"{o}/img/broken.png", f"{o}/style.css", f"{o}/js/missing.js"}
    assert not stored & resources


def test_why_not_followed_is_counted_in_crawl_json(crawled):
    _, _, summary = crawled
    assert summary["not_followed"] == {}  # nofollow is not obeyed by default, nothing else was set aside


def test_obeyed_nofollow_is_not_checked_and_counted_with_its_reason(tmp_path):
    with LinkWeb(62) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_SCOPE="any", CRAWL_OBEY_NOFOLLOW="1")
        summary = run_crawl(env, *web.seeds())
        rows = list(csv.DictReader(io.StringIO(manage(env, "dead_links"))))
        assert ("GET", "/private") not in web.requests
    assert summary["not_followed"] == {web.host: {"nofollow": 1}}
    listed = {r["target_url"] for r in rows}
    expected = {b.target for b in web.manifest()} - {f"{web.origin}/private"}
    assert listed == expected
