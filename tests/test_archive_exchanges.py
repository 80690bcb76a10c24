"""Every exchange for the archive, step by step on SQLite: the answers no Page row keeps (a redirect, a 4xx or
5xx, robots.txt, a sitemap) are kept with their heads and bodies, written as WARC records (response, a
revisit for a body written before, the crawl's verdict as metadata), their bodies dropped by retention, and
an export deduplicated against an earlier one's index."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from archive.dedup import PayloadIndex
from archive.selectors import ExportScope
from archive.services import warc_export
from crawlcore.models import Exchange, Server, Url
from crawlcore.services.exchanges import exchanges_drop_bodies
from crawlcore.services.pages import pages_store
from crawlcore.services.urls import NewUrl, urls_insert
from crawlcore.services.visit import ServerVisit
from crawler.http import FailureKind, FetchResult, Timings
from crawler.lifecycle import Agent

pytestmark = pytest.mark.django_db

WARCIO = str(Path(sys.executable).with_name("warcio"))
NOT_FOUND = b"<html><body>No such page</body></html>"


def answer(url: str, status: int, body: bytes = b"", *, headers: str = "", method: str = "GET", **kw) -> FetchResult:
    path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
    return FetchResult(
        url=url, method=method, status=status, headers={"content-type": "text/html"}, body=body,
        failure=kw.pop("failure", None), detail="", truncated=False, bytes_received=len(body),
        timings=Timings(None, None, None, None, 1.0), peer_ip="127.0.0.9",
        request_head=f"{method} /{path} HTTP/1.1\r\nHost: a.example\r\nUser-Agent: crawladmin/test",
        response_head=f"HTTP/1.1 {status} X\r\nContent-Type: text/html\r\nContent-Length: {len(body)}{headers}",
        **kw,
    )  # fmt: skip


def visit() -> ServerVisit:
    urls_insert(urls=[NewUrl("http://a.example/", depth=0)])
    return ServerVisit(Server.objects.get(host="a.example"), "test-owner", Agent.LOAD)


def url_id(url: str) -> int:
    return urls_insert(urls=[NewUrl(url, depth=0)]).ids[url]


def read(path) -> list:
    with open(path, "rb") as f:
        return [(r, r.content_stream().read()) for r in ArchiveIterator(f)]


def b32(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


def test_answers_without_a_page_are_kept_with_heads_and_body_and_pages_are_not():
    v = visit()
    missing, moved, page = (
        url_id("http://a.example/missing"),
        url_id("http://a.example/old"),
        url_id("http://a.example/p"),
    )
    v.record(answer("http://a.example/missing", 404, NOT_FOUND), missing)
    v.record(answer("http://a.example/old", 301, headers="\r\nLocation: /p"), moved)
    v.record(answer("http://a.example/p", 200, b"<p>page</p>"), page)  # its Page row keeps it
    v.record(answer("http://a.example/p", 304), page)  # a revisit of that page: also the Page row's
    v.record(answer("http://a.example/robots.txt", 200, b"User-agent: *\n"), None, kind=Exchange.ROBOTS)
    v.record(answer("http://a.example/x", 500, b"oops", failure=FailureKind.BODY_TIMEOUT), url_id("http://a.example/x"))
    rows = {e.requested_url.removeprefix("http://a.example"): e for e in Exchange.objects.all()}
    assert set(rows) == {"/missing", "/old", "/robots.txt", "/x"}
    assert rows["/missing"].status == 404 and bytes(rows["/missing"].body_z) and rows["/missing"].size == len(NOT_FOUND)
    assert rows["/missing"].checksum == hashlib.sha1(NOT_FOUND).hexdigest()
    assert rows["/old"].response_head.endswith("Location: /p") and rows["/old"].request_head.startswith("GET /old")
    assert rows["/robots.txt"].kind == "robots" and rows["/robots.txt"].url_id is None
    assert rows["/x"].truncated == "time"


def test_an_answer_with_a_status_no_column_holds_is_not_kept():
    v = visit()
    v.record(answer("http://a.example/weird", 404), url_id("http://a.example/weird"))
    v.record(dataclasses.replace(answer("http://a.example/zero", 404), status=0), url_id("http://a.example/zero"))
    v.record(
        dataclasses.replace(answer("http://a.example/none", 404), response_head=""), url_id("http://a.example/none")
    )
    assert [e.requested_url for e in Exchange.objects.all()] == ["http://a.example/weird"]


def test_retention_drops_old_bodies_and_keeps_heads(settings):
    v = visit()
    v.record(answer("http://a.example/old", 404, NOT_FOUND), url_id("http://a.example/old"))
    v.record(answer("http://a.example/new", 404, NOT_FOUND), url_id("http://a.example/new"))
    Exchange.objects.filter(requested_url__endswith="/old").update(fetched_at=timezone.now() - timedelta(days=40))
    settings.ARCHIVE_KEEP_ERROR_BODIES_DAYS = 0
    assert exchanges_drop_bodies() == 0  # 0: kept for ever
    settings.ARCHIVE_KEEP_ERROR_BODIES_DAYS = 30
    assert exchanges_drop_bodies() == 1 and exchanges_drop_bodies() == 0
    old, new = (
        Exchange.objects.get(requested_url__endswith="/old"),
        Exchange.objects.get(requested_url__endswith="/new"),
    )
    assert bytes(old.body_z) == b"" and old.body_dropped_at is not None and old.response_head.startswith("HTTP/1.1 404")
    assert bytes(new.body_z) != b"" and new.body_dropped_at is None


def test_export_writes_each_answer_a_repeated_body_as_a_revisit_and_the_verdict(tmp_path):
    v = visit()
    old = url_id("http://a.example/old")
    Url.objects.filter(id=old).update(redirect_to="http://a.example/p", state="visited")
    v.record(answer("http://a.example/old", 301, headers="\r\nLocation: /p"), old)
    v.record(answer("http://a.example/m1", 404, NOT_FOUND), url_id("http://a.example/m1"))
    v.record(answer("http://a.example/m2", 404, NOT_FOUND), url_id("http://a.example/m2"))
    v.record(answer("http://a.example/sitemap.xml", 200, b"<urlset/>"), None, kind=Exchange.SITEMAP)
    out = tmp_path / "x.warc.gz"
    summary = warc_export(out=out, scope=ExportScope())
    assert summary.exchanges == 4
    records = read(out)
    main = {
        r.rec_headers.get_header("WARC-Target-URI").removeprefix("http://a.example"): (r, body)
        for r, body in records
        if r.rec_type in ("response", "revisit")
    }
    redirect, _ = main["/old"]
    assert redirect.rec_type == "response" and redirect.http_headers.get_statuscode() == "301"
    assert redirect.http_headers.get_header("Location") == "/p"
    first, body = main["/m1"]
    assert first.rec_type == "response" and body == NOT_FOUND and first.http_headers.get_statuscode() == "404"
    assert first.rec_headers.get_header("WARC-Payload-Digest") == b32(NOT_FOUND)
    again, _ = main["/m2"]
    assert again.rec_type == "revisit" and again.rec_headers.get_header("WARC-Refers-To-Target-URI").endswith("/m1")
    assert main["/sitemap.xml"][1] == b"<urlset/>"
    requests = [r for r, _ in records if r.rec_type == "request"]
    assert len(requests) == 4
    meta = {
        r.rec_headers.get_header("WARC-Target-URI").removeprefix("http://a.example"): body.decode()
        for r, body in records
        if r.rec_type == "metadata"
    }
    assert "redirect: http://a.example/p" in meta["/old"] and "state: visited" in meta["/old"]
    assert "fetched-as: sitemap" in meta["/sitemap.xml"]


def test_a_dropped_body_is_written_as_a_truncated_response(tmp_path):
    v = visit()
    v.record(answer("http://a.example/m", 404, NOT_FOUND), url_id("http://a.example/m"))
    Exchange.objects.update(fetched_at=timezone.now() - timedelta(days=400))
    exchanges_drop_bodies(days=1)
    warc_export(out=tmp_path / "x.warc.gz", scope=ExportScope())
    (response,) = [(r, b) for r, b in read(tmp_path / "x.warc.gz") if r.rec_type == "response"]
    assert response[1] == b"" and response[0].rec_headers.get_header("WARC-Truncated") == "unspecified"
    assert response[0].rec_headers.get_header("WARC-Payload-Digest") == b32(b"")


def test_a_page_links_not_followed_are_in_its_metadata_with_why(tmp_path):
    from crawlcore.models import Link

    page, private = url_id("http://a.example/p"), url_id("http://a.example/private/x")
    Url.objects.filter(id=private).update(exclusion_reason="robots.txt")
    Link.objects.create(from_url_id=page, to_url_id=private)
    pages_store([(page, answer("http://a.example/p", 200, b"<p>x</p>"), hashlib.sha1(b"<p>x</p>").hexdigest())],
                now=timezone.now())  # fmt: skip
    warc_export(out=tmp_path / "x.warc.gz", scope=ExportScope())
    (meta,) = [b.decode() for r, b in read(tmp_path / "x.warc.gz") if r.rec_type == "metadata"]
    assert "outlink: http://a.example/private/x\r\n" in meta
    assert "not-followed: http://a.example/private/x robots.txt\r\n" in meta


def test_an_export_against_an_earlier_ones_index_writes_revisits_for_what_it_holds(tmp_path):
    v = visit()
    body = b"<p>the same</p>"
    first = url_id("http://a.example/p")
    pages_store([(first, answer("http://a.example/p", 200, body), hashlib.sha1(body).hexdigest())], now=timezone.now())
    v.record(answer("http://a.example/m", 404, NOT_FOUND), url_id("http://a.example/m"))
    call_command("export_warc", str(tmp_path / "one.warc.gz"), "--no-progress", stdout=io.StringIO())
    index = PayloadIndex.from_cdxj(tmp_path / "one.cdxj")
    assert index.earlier(b32(body)) == ("http://a.example/p", index.earlier(b32(body))[1])
    # A second crawl: the same page under another URL, the same 404 again, a new page.
    second = url_id("http://a.example/q")
    pages_store([(second, answer("http://a.example/q", 200, body), hashlib.sha1(body).hexdigest())], now=timezone.now())
    v.record(answer("http://a.example/m", 404, NOT_FOUND), url_id("http://a.example/m"))
    out = io.StringIO()
    call_command(
        "export_warc", str(tmp_path / "two.warc.gz"), "--no-progress", "--dedup-cdxj", str(tmp_path / "one.cdxj"),
        stdout=out,
    )  # fmt: skip
    kinds = {}
    for r, _ in read(tmp_path / "two.warc.gz"):
        if r.rec_type in ("response", "revisit"):
            kinds.setdefault(r.rec_headers.get_header("WARC-Target-URI"), []).append(r.rec_type)
    assert kinds["http://a.example/q"] == ["revisit"] and kinds["http://a.example/p"] == ["revisit"]
    assert kinds["http://a.example/m"] == ["revisit", "revisit"]
    assert "4 revisits of a payload archived before" in out.getvalue()


def test_since_export_takes_only_what_came_after_the_previous_export(tmp_path):
    v = visit()
    v.record(answer("http://a.example/m", 404, NOT_FOUND), url_id("http://a.example/m"))
    v.record(answer("http://a.example/gone", 404, b"gone"), url_id("http://a.example/gone"))
    Exchange.objects.filter(requested_url__endswith="/gone").update(fetched_at=timezone.now() - timedelta(hours=2))
    Exchange.objects.filter(requested_url__endswith="/m").update(fetched_at=timezone.now() - timedelta(hours=1))
    call_command("export_warc", str(tmp_path / "one.warc.gz"), "--no-progress", stdout=io.StringIO())
    v.record(answer("http://a.example/n", 404, b"another"), url_id("http://a.example/n"))
    call_command(
        "export_warc", str(tmp_path / "two.warc.gz"), "--no-progress", "--since-export", str(tmp_path / "one.cdxj"),
        stdout=io.StringIO(),
    )  # fmt: skip
    kinds = {}
    for r, _ in read(tmp_path / "two.warc.gz"):
        if r.rec_type in ("response", "revisit"):
            kinds.setdefault(r.rec_headers.get_header("WARC-Target-URI"), []).append(r.rec_type)
    # From the newest record of the previous export on (within its second: nothing fetched then is lost), what
    # it holds as revisits; nothing older.
    assert kinds == {"http://a.example/n": ["response"], "http://a.example/m": ["revisit"]}


def test_command_refuses_a_bad_earlier_index_in_one_line(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("export_warc", str(tmp_path / "x.warc.gz"), "--dedup-cdxj", str(tmp_path / "none.cdxj"))
    (tmp_path / "bad.cdxj").write_text("not an index\n")
    with pytest.raises(CommandError, match="not a CDXJ index"):
        call_command("export_warc", str(tmp_path / "x.warc.gz"), "--dedup-cdxj", str(tmp_path / "bad.cdxj"))
    (tmp_path / "empty.cdxj").write_text("")
    with pytest.raises(CommandError, match="empty index"):
        call_command("export_warc", str(tmp_path / "x.warc.gz"), "--since-export", str(tmp_path / "empty.cdxj"))
    with pytest.raises(CommandError, match="give --since or --since-export"):
        call_command(
            "export_warc", str(tmp_path / "x.warc.gz"), "--since-export", str(tmp_path / "empty.cdxj"),
            "--since", "2026-01-01",
        )  # fmt: skip


def test_a_pywb_collection_index_serves_as_an_earlier_export(tmp_path):
    """pywb's own index names no record type and writes digests without their label."""
    digest = base64.b32encode(hashlib.sha1(NOT_FOUND).digest()).decode()
    (tmp_path / "index.cdxj").write_text(
        f'a,example)/m 20261101000000 {{"url": "http://a.example/m", "mime": "text/html", "status": "404", '
        f'"digest": "{digest}", "length": "1", "offset": "0", "filename": "x.warc.gz"}}\n'
        f'a,example)/n 20261102000000 {{"url": "http://a.example/n", "mime": "warc/revisit", '
        f'"digest": "{digest}", "length": "1", "offset": "9", "filename": "x.warc.gz"}}\n'
    )
    index = PayloadIndex.from_cdxj(tmp_path / "index.cdxj")
    assert len(index) == 1 and index.earlier(b32(NOT_FOUND))[0] == "http://a.example/m"
    assert index.latest.isoformat() == "2026-11-02T00:00:00+00:00"


def test_crawl_log_is_a_resource_record_of_every_answered_check(tmp_path):
    from crawlcore.models import StatusCheck
    from crawlcore.services.request_records import check_begin

    v = visit()
    v.record(answer("http://a.example/m", 404, NOT_FOUND), url_id("http://a.example/m"))
    v.record(answer("http://a.example/robots.txt", 200, b"User-agent: *\n"), None, kind=Exchange.ROBOTS)
    check_begin(server_id=v.server.id, requested_url="http://a.example/pending", method="GET", agent=Agent.LOAD)
    assert StatusCheck.objects.count() == 3
    call_command("export_warc", str(tmp_path / "x.warc.gz"), "--no-progress", "--crawl-log", stdout=io.StringIO())
    (log,) = [(r, body) for r, body in read(tmp_path / "x.warc.gz") if r.rec_type == "resource"]
    assert log[0].rec_headers.get_header("WARC-Target-URI") == "crawladmin:crawl.log"
    lines = log[1].decode().splitlines()
    assert len(lines) == 2  # the pending check is no answer yet
    assert " 404 " in lines[0] and " GET http://a.example/m load error " in lines[0]
    assert " 200 " in lines[1] and "http://a.example/robots.txt" in lines[1]
    proc = subprocess.run([WARCIO, "check", str(tmp_path / "x.warc.gz")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
