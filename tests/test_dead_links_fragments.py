"""`dead_links` on a small web of its own (none of the bundled test webs): a link to a #fragment that names
nothing on the same page is reported like one on another page, and the export's columns hold what their
names say (the target with its fragment, no redirect chain for a missing anchor, first seen broken never
after the last check)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .crawlcheck import ROOT, clean_env, run_crawl

PAGES = {
    "/": '<h1 id="top-of-home">Home</h1><a href="/summary.html">Summary</a> <a href="/detail.html#gone">Gone</a>',
    "/summary.html": (
        '<h2 id="here">Here</h2>'
        '<a href="summary.html#nowhere">Nowhere on this page</a>'  # same page, missing: broken
        ' <a href="#here">Here</a>'  # same page, present: fine
        ' <a href="/detail.html#part">Part</a>'  # other page, present: fine
        ' <a href="/">Home</a>'
    ),
    "/detail.html": '<p id="part">Part</p><a href="/summary.html">Back</a> <a href="/missing.html">Missing</a>',
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = PAGES.get(self.path.split("?")[0])
        status = 200 if body is not None else 404
        data = f"<!doctype html><html><head><title>t</title></head><body>{body or 'no'}</body></html>".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_HEAD = do_GET

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def crawled(tmp_path_factory) -> Iterator[tuple[str, dict[str, str], str]]:
    server = ThreadingHTTPServer(("127.0.0.21", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        origin = f"http://127.0.0.21:{server.server_address[1]}"
        data = tmp_path_factory.mktemp("fragments")
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data), CRAWL_SCOPE="host")
        run_crawl(env, origin + "/")
        yield origin, env, str(data / "crawladmin.sqlite3")
    finally:
        server.shutdown()
        server.server_close()


def _dead_links(env: dict[str, str]) -> list[dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "manage.py", "dead_links"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return list(csv.DictReader(io.StringIO(proc.stdout)))


def test_a_missing_fragment_on_the_same_page_is_reported(crawled):
    origin, env, _ = crawled
    rows = {(r["source_url"], r["target_url"]): r for r in _dead_links(env)}
    same = rows.get((f"{origin}/summary.html", f"{origin}/summary.html#nowhere"))
    assert same is not None, sorted(rows)
    assert same["failure_kind"] == "missing anchor" and same["anchor_text"] == "Nowhere on this page"
    # The other breaks of this web, and nothing else: a present anchor on the same page is no break.
    assert sorted(rows) == sorted([
        (f"{origin}/", f"{origin}/detail.html#gone"),
        (f"{origin}/summary.html", f"{origin}/summary.html#nowhere"),
        (f"{origin}/detail.html", f"{origin}/missing.html"),
    ])  # fmt: skip


def test_export_columns_hold_what_their_names_say(crawled):
    _, env, _ = crawled
    rows = _dead_links(env)
    for r in rows:
        if r["failure_kind"] == "missing anchor":
            assert r["redirect_chain"] == "" and "#" in r["target_url"], r
        assert r["first_broken_at"] and r["last_checked_at"], r
        assert datetime.fromisoformat(r["first_broken_at"]) <= datetime.fromisoformat(r["last_checked_at"]), r


def test_a_self_link_is_stored_only_for_a_missing_fragment(crawled):
    origin, env, db = crawled
    con = sqlite3.connect(db)
    try:
        selfs = con.execute(
            "SELECT u.url, l.fragments FROM crawladmin_link l JOIN crawladmin_url u ON u.id = l.from_url_id"
            " WHERE l.from_url_id = l.to_url_id"
        ).fetchall()
    finally:
        con.close()
    assert [(url, fragments.split("\n")[0]) for url, fragments in selfs] == [
        (f"{origin}/summary.html", "nowhere\tNowhere on this page")
    ]


def test_overview_site_page_and_export_count_the_same_broken_links(crawled):
    """One set of figures: the dead-links overview's count for the site, the site page's total (the open
    records of the site) and the rows `dead_links` writes."""
    _, env, db = crawled
    rows = _dead_links(env)
    proc = subprocess.run(
        [sys.executable, "manage.py", "dashboard_refresh", "--only", "dead_links"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    con = sqlite3.connect(db)
    try:
        (data,) = con.execute("SELECT data FROM dashboard_snapshot WHERE name = 'dead_links'").fetchone()
        (site_total,) = con.execute("SELECT count(*) FROM reports_linkbreak WHERE fixed_at IS NULL").fetchone()
    finally:
        con.close()
    (site,) = json.loads(data)["sites"]
    assert site["links"] == site_total == len(rows) == 3
    assert site["pages"] == 3 and site["targets"] == 3
