"""An archive that replays: a site with a redirecting home page, 404s, a 410, a 500, duplicate pages, a
resource, robots.txt and a sitemap (testweb.replay, drawn from a seed: ARCHIVE_REPLAY_SEED picks another
web) crawled with `manage.py crawl` (embedded), exported with `manage.py export_warc`, then:

* every request the site's access log shows has its request and response (or revisit) record, and nothing
  else does; the file passes `warcio check`;
* the export is added to a pywb collection (`wb-manager init` / `add`), served by pywb's `wayback` on a
  loopback port, and the home page replays through its redirect, as do a deep page, a 404 page and pages
  whose records are revisits, each with the bytes the site sent.

pywb runs from a venv of its own (testweb.pywb: made from requirements-pywb.txt when missing)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from testweb.pywb import Pywb
from testweb.replay import NOT_FOUND, ReplaySpec, ReplayWeb

from .crawlcheck import ROOT, clean_env, run_crawl

WARCIO = str(Path(sys.executable).with_name("warcio"))
SEED = int(os.environ.get("ARCHIVE_REPLAY_SEED", "5"))


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    data = tmp_path_factory.mktemp("replay")
    with ReplayWeb(ReplaySpec(host="127.0.0.71", seed=SEED)) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
        run_crawl(env, f"{web.origin}/")
        log = list(web.access_log)
        out = data / "crawl.warc.gz"
        proc = subprocess.run(
            [sys.executable, "manage.py", "export_warc", str(out), "--no-progress"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    with out.open("rb") as f:
        records = [(r, r.content_stream().read()) for r in ArchiveIterator(f)]
    yield web, log, out, records


@pytest.fixture(scope="module")
def replay(crawled, tmp_path_factory):
    web, _, out, _ = crawled
    with Pywb(tmp_path_factory.mktemp("pywb"), [out]) as pywb:
        yield web, pywb


def test_warcio_check_passes(crawled):
    *_, out, _ = crawled
    proc = subprocess.run([WARCIO, "check", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_every_request_the_site_saw_has_its_request_and_response_records(crawled):
    web, log, _, records = crawled
    by_id = {r.rec_headers.get_header("WARC-Record-ID"): r for r, _ in records}
    seen = Counter((a.method, web.url(a.path)) for a in log)
    kinds = {a.path for a in log}
    # The web's every kind of answer was requested: a redirecting home page, 404s, robots.txt, the sitemap.
    assert {"/", "/robots.txt", "/sitemap.xml", "/old.html", "/gone.html", "/broken.html", *web.missing} <= kinds
    written = Counter()
    for record, _ in records:
        if record.rec_type == "request":
            answer = by_id[record.rec_headers.get_header("WARC-Concurrent-To")]
            assert answer.rec_type in ("response", "revisit")
            assert answer.rec_headers.get_header("WARC-Target-URI") == record.rec_headers.get_header("WARC-Target-URI")
            written[(record.http_headers.protocol, record.rec_headers.get_header("WARC-Target-URI"))] += 1
    assert written == seen
    answers = Counter(
        r.rec_headers.get_header("WARC-Target-URI") for r, _ in records if r.rec_type in ("response", "revisit")
    )
    assert answers == Counter(url for _, url in seen.elements())


def test_records_hold_the_status_headers_and_bytes_each_request_got(crawled):
    web, _, _, records = crawled
    method = {
        r.rec_headers.get_header("WARC-Concurrent-To"): r.http_headers.protocol
        for r, _ in records
        if r.rec_type == "request"
    }
    responses = [(r, body) for r, body in records if r.rec_type == "response"]
    assert responses
    for record, body in responses:
        path = record.rec_headers.get_header("WARC-Target-URI").removeprefix(web.origin)
        status, headers, sent = web.answer(path)
        assert record.http_headers.get_statuscode() == str(status), path
        if "Location" in headers:
            assert record.http_headers.get_header("Location") == headers["Location"], path
        got = method[record.rec_headers.get_header("WARC-Record-ID")]
        assert body == (sent if got == "GET" else b""), path


def test_duplicates_and_the_repeated_404_page_are_revisits(crawled):
    web, _, _, records = crawled
    revisits = {
        r.rec_headers.get_header("WARC-Target-URI").removeprefix(web.origin): r
        for r, _ in records
        if r.rec_type == "revisit"
    }
    assert set(web.copy_paths()) <= set(revisits)
    assert sum(1 for path in web.missing if path in revisits) == len(web.missing) - 1  # the first one holds it


def test_home_page_replays_through_its_redirect(replay):
    web, pywb = replay
    # As archived: the status and Location the site sent.
    raw = pywb.get(web.url("/"), follow=False)
    assert raw.status_code == web.home_redirect and raw.headers["Location"] == "/index.html"
    # As a browser follows it in the replay: to the archived home page.
    landed = pywb.get_rewritten(web.url("/"))
    assert landed.status_code == 200 and landed.history and landed.history[0].status_code == web.home_redirect
    assert landed.url.endswith(f"/{web.origin}/index.html")
    target = landed.url.split("/mp_/", 1)[1]
    assert pywb.get(target).content == web.answer("/index.html")[2]


def test_a_deep_page_a_404_and_revisited_pages_replay_with_the_bytes_the_site_sent(replay):
    web, pywb = replay
    deep = web.deep_paths()[-1]
    got = pywb.get(web.url(deep))
    assert got.status_code == 200 and got.content == web.answer(deep)[2]
    for missing in web.missing:  # the first a response, the others revisits of it
        got = pywb.get(web.url(missing))
        assert got.status_code == 404 and got.content == NOT_FOUND
    for copy in web.copy_paths():  # revisits of the page they copy
        got = pywb.get(web.url(copy))
        assert got.status_code == 200 and got.content == web.answer(copy)[2]
    got = pywb.get(web.url("/robots.txt"))
    assert got.status_code == 200 and got.content == web.answer("/robots.txt")[2]
