"""The archive end to end: a site publishing a gzip sitemap index crawled with `manage.py crawl` (embedded,
SQLite), then exported with `manage.py export_warc`, and the file read back with warcio."""

from __future__ import annotations

import base64
import hashlib
import io
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive.cdxj import read_index, surt
from testweb.sitemaps import SitemapSite, SitemapSiteSpec

from .crawlcheck import ROOT, clean_env, run_crawl

WARCIO = str(Path(sys.executable).with_name("warcio"))


def b32(checksum: str) -> str:
    return "sha1:" + base64.b32encode(bytes.fromhex(checksum)).decode()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    data = tmp_path_factory.mktemp("archive")
    with SitemapSite(SitemapSiteSpec(host="127.0.0.62", orphans=7, duplicates=3)) as site:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
        summary = run_crawl(env, f"{site.origin}/")
        out = data / "crawl.warc.gz"
        proc = subprocess.run(
            [sys.executable, "manage.py", "export_warc", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        con = sqlite3.connect(data / "crawladmin.sqlite3")
        con.row_factory = sqlite3.Row
        records = []
        with out.open("rb") as f:
            it = ArchiveIterator(f)
            for record in it:
                payload = record.content_stream().read()
                records.append((it.get_record_offset(), record, payload))
        yield site, summary, con, out, records, proc
        con.close()


def _pages(con) -> list[sqlite3.Row]:
    return con.execute(
        "SELECT p.id, u.url, p.checksum, p.duplicate_of_id, d.url AS original, p.request_head "
        "FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id "
        "LEFT JOIN crawladmin_page dp ON dp.id = p.duplicate_of_id LEFT JOIN crawladmin_url d ON d.id = dp.url_id"
    ).fetchall()


def test_crawl_finds_the_orphans_listed_only_in_sitemaps(exported):
    site, summary, con, *_ = exported
    states = dict(con.execute("SELECT url, state FROM crawladmin_url").fetchall())
    assert set(states) == set(site.expected_pages())
    assert set(states.values()) == {"visited"}
    linked_to = {
        u
        for (u,) in con.execute(
            "SELECT DISTINCT u.url FROM crawladmin_link l JOIN crawladmin_url u ON u.id = l.to_url_id"
        )
    }
    in_sitemap = {u for (u,) in con.execute("SELECT url FROM crawladmin_url WHERE in_sitemap")}
    orphans = {f"{site.origin}{p}" for p in site.orphan_paths()}
    assert in_sitemap == orphans and not orphans & linked_to


def test_sitemap_fields_kept_per_url(exported):
    site, _, con, *_ = exported
    row = con.execute(
        "SELECT sitemap_lastmod, sitemap_changefreq, sitemap_priority FROM crawladmin_url WHERE url = ?",
        (f"{site.origin}/orphan/1.html",),
    ).fetchone()
    assert row["sitemap_lastmod"].startswith("2026-02-15 08:00:00")
    assert row["sitemap_changefreq"] == "weekly" and row["sitemap_priority"] == pytest.approx(0.1)


def test_each_sitemap_recorded_bad_ones_with_their_error_and_nothing_else_requested(exported):
    site, _, con, *_ = exported
    rows = {r["url"].removeprefix(site.origin): r for r in con.execute("SELECT * FROM crawladmin_sitemap")}
    assert rows["/maps/index.xml.gz"]["kind"] == "index" and rows["/maps/index.xml.gz"]["source"] == "robots"
    assert rows["/sitemap.xml"]["source"] == "default" and rows["/sitemap.xml"]["urls_added"] == 1
    assert rows["/maps/pages.xml.gz"]["kind"] == "urlset" and rows["/maps/urls.txt"]["kind"] == "text"
    assert rows["/maps/bad.xml"]["error"].startswith("bad XML")
    assert "entities" in rows["/maps/xxe.xml"]["error"]
    assert "nested more than" in rows["/maps/deep-2.xml"]["error"] and "/maps/deep-3.xml" not in rows
    # Another host's sitemap, another host's page and a disallowed page: neither requested nor added.
    assert not any("127.0.0.254" in u for u in rows)
    urls = {u for (u,) in con.execute("SELECT url FROM crawladmin_url")}
    assert not any("127.0.0.254" in u or "/private/" in u or "never-reached" in u for u in urls)
    assert "/private/secret.html" not in site.requests


def test_warcio_check_passes(exported):
    *_, out, _, _ = exported
    proc = subprocess.run([WARCIO, "check", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_one_response_per_fetched_page_with_its_checksum_as_digest_and_revisits_for_duplicates(exported):
    _, _, con, _, records, _ = exported
    by_uri: dict[str, list] = defaultdict(list)
    for _, record, payload in records:
        by_uri[record.rec_headers.get_header("WARC-Target-URI")].append((record, payload))
    pages = _pages(con)
    duplicates = [p for p in pages if p["duplicate_of_id"] is not None]
    assert len(duplicates) == 3
    for page in pages:
        kinds = Counter(r.rec_type for r, _ in by_uri[page["url"]])
        main = [(r, body) for r, body in by_uri[page["url"]] if r.rec_type in ("response", "revisit")]
        assert len(main) == 1, (page["url"], kinds)
        record, body = main[0]
        assert record.rec_headers.get_header("WARC-Payload-Digest") == b32(page["checksum"])
        assert kinds["request"] == 1
        if page["duplicate_of_id"] is None:
            assert record.rec_type == "response" and hashlib.sha1(body).hexdigest() == page["checksum"]
        else:
            assert record.rec_type == "revisit"
            assert record.rec_headers.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
            assert record.rec_headers.get_header("WARC-Refers-To-Target-URI") == page["original"]
    page_urls = {p["url"] for p in pages}
    responses = sum(
        1
        for _, r, _ in records
        if r.rec_type == "response" and r.rec_headers.get_header("WARC-Target-URI") in page_urls
    )
    assert responses == len(pages) - len(duplicates)


def test_every_request_the_site_answered_has_its_record_robots_txt_and_sitemaps_included(exported):
    site, _, _, _, records, _ = exported
    answered = Counter(f"{site.origin}{path}" for path in site.requests)
    kept = Counter(
        r.rec_headers.get_header("WARC-Target-URI") for _, r, _ in records if r.rec_type in ("response", "revisit")
    )
    assert f"{site.origin}/robots.txt" in answered and f"{site.origin}/maps/index.xml.gz" in answered
    assert {url: n for url, n in answered.items() if kept[url] < n} == {}


def test_request_records_are_the_requests_sent_and_point_at_their_response(exported):
    _, _, con, _, records, _ = exported
    ids = {r.rec_headers.get_header("WARC-Record-ID"): r for _, r, _ in records}
    requests = [r for _, r, _ in records if r.rec_type == "request"]
    assert requests
    for request in requests:
        target = ids[request.rec_headers.get_header("WARC-Concurrent-To")]
        assert target.rec_headers.get_header("WARC-Target-URI") == request.rec_headers.get_header("WARC-Target-URI")
        assert request.http_headers.protocol == "GET"
        assert request.http_headers.get_header("User-Agent", "").startswith("crawladmin/")
        assert request.http_headers.get_header("Host")


def test_a_gzip_encoded_response_describes_the_decoded_body_stored(exported):
    _, _, _, _, records, _ = exported
    for _, record, body in records:
        if record.rec_type == "response":
            h = record.http_headers
            if h.get_header("Content-Type") == "text/html":  # the site gzips every page, not robots.txt or sitemaps
                assert h.get_header("X-Archive-Orig-Content-Encoding") == "gzip"
            assert h.get_header("Content-Encoding") is None
            assert int(h.get_header("Content-Length")) == len(body)


def test_metadata_records_list_each_pages_outlinks(exported):
    _, _, con, _, records, _ = exported
    links = defaultdict(set)
    for src, dst in con.execute(
        "SELECT f.url, t.url FROM crawladmin_link l JOIN crawladmin_url f ON f.id = l.from_url_id "
        "JOIN crawladmin_url t ON t.id = l.to_url_id"
    ):
        links[src].add(dst)
    meta = {
        r.rec_headers.get_header("WARC-Target-URI"): {
            line.removeprefix("outlink: ") for line in body.decode().splitlines() if line
        }
        for _, r, body in records
        if r.rec_type == "metadata"
    }
    meta = {url: {line for line in lines if not line.startswith(("not-followed: ", "state: ", "fetched-as: "))}
            for url, lines in meta.items()}  # fmt: skip
    assert {url: lines for url, lines in meta.items() if lines} == dict(links)


def test_cdxj_index_finds_every_record(exported):
    _, _, _, out, records, _ = exported
    index = list(read_index(out.with_name("crawl.cdxj")))
    assert [f"{k} {s}" for k, s, _ in index] == sorted(f"{k} {s}" for k, s, _ in index)
    at = {(f["filename"], f["offset"]): (k, f) for k, _, f in index}
    data = out.read_bytes()
    for offset, record, _ in records:
        if record.rec_type == "warcinfo":
            continue
        key, fields = at[(out.name, offset)]
        uri = record.rec_headers.get_header("WARC-Target-URI")
        assert key == surt(uri) and fields["url"] == uri and fields["type"] == record.rec_type
        # The (offset, length) it gives is that record, whole.
        chunk = data[offset : offset + fields["length"]]
        (again,) = list(ArchiveIterator(io.BytesIO(chunk)))
        assert again.rec_headers.get_header("WARC-Record-ID") == record.rec_headers.get_header("WARC-Record-ID")
    assert len(index) == len(records) - 1


def test_export_prints_what_it_wrote_and_a_progress_bar_on_stderr(exported):
    *_, proc = exported
    assert "records" in proc.stdout and "crawl.cdxj" in proc.stdout
    assert "page" in proc.stderr
