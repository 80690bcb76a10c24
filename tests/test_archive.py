"""The archive step by step: what the load path keeps of an exchange, the revisits, the export's
scope, roll-over and index, on SQLite."""

from __future__ import annotations

import base64
import hashlib
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from archive.cdxj import IndexSorter, read_index, surt
from archive.management.commands.export_warc import parse_since, parse_size
from archive.records import http_response_headers
from archive.selectors import ExportScope
from archive.services import warc_export
from crawlcore.models import Page, Server, Url
from crawlcore.services.pages import pages_store
from crawlcore.services.scan import page_revisit
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.http import FetchResult, Timings
from crawler.sanitize import MAX_HEAD_BYTES, clean_head

pytestmark = pytest.mark.django_db

REQUEST = "GET /p HTTP/1.1\r\nHost: a.example\r\nUser-Agent: crawladmin/test"


def result(body: bytes, *, status: int = 200, head: str | None = None, url: str = "http://a.example/p") -> FetchResult:
    return FetchResult(
        url=url, method="GET", status=status, headers={"content-type": "text/html"}, body=body, failure=None,
        detail="", truncated=False, bytes_received=len(body), timings=Timings(None, None, None, None, 1.0),
        peer_ip="127.0.0.9", request_head=REQUEST,
        response_head=head or f"HTTP/1.1 {status} OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}",
    )  # fmt: skip


def store(url_id: int, body: bytes, **kw) -> None:
    checksum = hashlib.sha1(body).hexdigest()
    pages_store([(url_id, result(body, **kw), checksum)], now=timezone.now())


def insert(*urls: str) -> list[int]:
    ids = urls_insert(urls=[NewUrl(u, depth=0) for u in urls]).ids
    return [ids[u] for u in urls]


def read(path) -> list:
    with open(path, "rb") as f:
        return [(r, r.content_stream().read()) for r in ArchiveIterator(f)]


def test_page_keeps_the_request_sent_and_the_response_head_received():
    (pk,) = insert("http://a.example/p")
    store(pk, b"<p>one</p>")
    page = Page.objects.get(url_id=pk)
    assert page.request_head == REQUEST and page.response_head.startswith("HTTP/1.1 200 OK\r\n")
    assert page.peer_ip == "127.0.0.9" and page.revisit_at is None


def test_refetch_with_the_same_body_keeps_the_first_exchange_and_becomes_its_revisit():
    (pk,) = insert("http://a.example/p")
    store(pk, b"<p>one</p>", head="HTTP/1.1 200 OK\r\nX-First: 1")
    first = Page.objects.get(url_id=pk)
    store(pk, b"<p>one</p>", head="HTTP/1.1 200 OK\r\nX-Second: 2")
    page = Page.objects.get(url_id=pk)
    assert page.fetched_at == first.fetched_at and "X-First" in page.response_head
    assert page.revisit_at > first.fetched_at and "X-Second" in page.revisit_response_head
    store(pk, b"<p>two</p>", head="HTTP/1.1 200 OK\r\nX-Third: 3")  # a new body replaces the copy
    page = Page.objects.get(url_id=pk)
    assert "X-Third" in page.response_head and page.revisit_at is None and page.revisit_response_head == ""


def test_export_writes_a_refetch_of_the_same_body_as_a_revisit_of_the_first(tmp_path):
    (pk,) = insert("http://a.example/p")
    store(pk, b"<p>one</p>")
    store(pk, b"<p>one</p>")
    out = tmp_path / "x.warc.gz"
    warc_export(out=out, scope=ExportScope())
    records = read(out)
    assert [r.rec_type for r, _ in records] == ["warcinfo", "response", "request", "revisit", "request"]
    response, revisit = records[1][0], records[3][0]
    assert revisit.rec_headers.get_header("WARC-Profile").endswith("identical-payload-digest")
    assert revisit.rec_headers.get_header("WARC-Refers-To-Date") == response.rec_headers.get_header("WARC-Date")
    digest = "sha1:" + base64.b32encode(hashlib.sha1(b"<p>one</p>").digest()).decode()
    assert (
        revisit.rec_headers.get_header("WARC-Payload-Digest")
        == digest
        == response.rec_headers.get_header("WARC-Payload-Digest")
    )


def test_a_304_recheck_is_a_server_not_modified_revisit(tmp_path):
    (pk,) = insert("http://a.example/p")
    store(pk, b"<p>one</p>")
    page_revisit(url_id=pk, result=result(b"", status=304, head="HTTP/1.1 304 Not Modified"), now=timezone.now())
    out = tmp_path / "x.warc.gz"
    warc_export(out=out, scope=ExportScope())
    (revisit,) = [r for r, _ in read(out) if r.rec_type == "revisit"]
    assert revisit.rec_headers.get_header("WARC-Profile").endswith("/revisit/server-not-modified")
    assert revisit.http_headers.get_statuscode() == "304"


def test_site_scope_and_a_duplicate_whose_original_is_outside_it(tmp_path):
    a, b = insert("http://a.example/p", "http://b.example/q")
    store(a, b"same")
    store(b, b"same")
    Page.objects.filter(url_id=b).update(duplicate_of=Page.objects.get(url_id=a))
    out = tmp_path / "b.warc.gz"
    summary = warc_export(out=out, scope=ExportScope(site="b.example"))
    kinds = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r, _ in read(out)]
    # The original is not in this file: the page's payload is written in full, not as a revisit.
    assert ("response", "http://b.example/q") in kinds and not any(u == "http://a.example/p" for _, u in kinds)
    assert summary.pages == 1
    warc_export(out=tmp_path / "all.warc.gz", scope=ExportScope())
    types = {
        u: t
        for t, u in (
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r, _ in read(tmp_path / "all.warc.gz")
        )
        if t != "request"
    }
    assert types["http://b.example/q"] == "revisit"


def test_since_takes_only_what_was_fetched_or_revisited_since(tmp_path):
    old, new = insert("http://a.example/old", "http://a.example/new")
    store(old, b"old")
    store(new, b"new")
    Page.objects.filter(url_id=old).update(fetched_at=timezone.now() - timedelta(days=3))
    summary = warc_export(out=tmp_path / "s.warc.gz", scope=ExportScope(since=timezone.now() - timedelta(days=1)))
    uris = {r.rec_headers.get_header("WARC-Target-URI") for r, _ in read(tmp_path / "s.warc.gz")}
    assert summary.pages == 1 and "http://a.example/new" in uris and "http://a.example/old" not in uris


def test_group_scope(tmp_path):
    a, b = insert("http://a.example/p", "http://b.example/q")
    store(a, b"a")
    store(b, b"b")
    Server.objects.filter(host="b.example").update(group="library")
    summary = warc_export(out=tmp_path / "g.warc.gz", scope=ExportScope(group="library"))
    assert summary.pages == 1


def test_max_size_rolls_over_to_numbered_files_each_opening_with_warcinfo(tmp_path):
    ids = insert(*(f"http://a.example/{k}" for k in range(5)))
    for k, pk in enumerate(ids):
        store(pk, f"<p>{k}</p>".encode() * 50)
    out = tmp_path / "roll.warc.gz"
    summary = warc_export(out=out, scope=ExportScope(), max_size=1)
    assert [p.name for p in summary.files] == [f"roll-{n:05d}.warc.gz" for n in range(1, 6)]
    index = list(read_index(tmp_path / "roll.cdxj"))
    for path in summary.files:
        records = read(path)
        assert records[0][0].rec_type == "warcinfo" and [r.rec_type for r, _ in records[1:]] == ["response", "request"]
    assert {f["filename"] for _, _, f in index} == {p.name for p in summary.files}


def test_command_checks_its_arguments(tmp_path):
    with pytest.raises(CommandError, match="warc.gz"):
        call_command("export_warc", str(tmp_path / "x.warc"))
    with pytest.raises(CommandError, match="at least"):
        call_command("export_warc", str(tmp_path / "x.warc.gz"), "--max-size", "10k")
    with pytest.raises(CommandError, match="--since"):
        call_command("export_warc", str(tmp_path / "x.warc.gz"), "--since", "yesterday")
    assert parse_size("1G") == 1024**3 and parse_size("500M") == 500 * 1024**2
    assert parse_since("2026-11-01").isoformat() == "2026-11-01T00:00:00+00:00"


def test_empty_export_is_a_valid_file_with_its_warcinfo(tmp_path):
    out = tmp_path / "e.warc.gz"
    call_command("export_warc", str(out), "--no-progress", stdout=io.StringIO())
    assert [r.rec_type for r, _ in read(out)] == ["warcinfo"]


def test_response_headers_rewritten_for_the_decoded_body():
    head = (
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2"
    )
    h = http_response_headers(head, body_length=42, content_type="text/html")
    assert h.get_header("Content-Length") == "42" and h.get_header("Content-Encoding") is None
    assert h.get_header("X-Archive-Orig-Transfer-Encoding") == "chunked"
    assert [v for n, v in h.headers if n == "Set-Cookie"] == ["a=1", "b=2"]


def test_head_is_bounded_and_cleaned():
    head = clean_head("HTTP/1.1 200 OK", [("X-Nul", "a\x00b")] + [("X-Flood", "y" * 1000)] * 100)
    assert len(head) <= MAX_HEAD_BYTES and "X-Nul: ab" in head and "\x00" not in head


def test_surt_and_external_sort(tmp_path):
    assert surt("http://www.Example.com:80/A?b=1") == "com,example)/a?b=1"
    assert surt("http://127.0.0.9:8080/") == "127.0.0.9:8080)/"
    sorter = IndexSorter(tmp_path / "i.cdxj", run_lines=3)
    lines = [f"k{n % 7} 2026 {{}}\n" for n in range(20)]
    for line in lines:
        sorter.add(line)
    assert sorter.finish() == 20
    assert (tmp_path / "i.cdxj").read_text().splitlines(keepends=True) == sorted(lines)
    assert not list(tmp_path.glob(".cdxj-run-*"))


def test_url_rows_untouched_by_export(tmp_path):
    (pk,) = insert("http://a.example/p")
    store(pk, b"x")
    before = list(Url.objects.values())
    warc_export(out=tmp_path / "x.warc.gz", scope=ExportScope())
    assert list(Url.objects.values()) == before
