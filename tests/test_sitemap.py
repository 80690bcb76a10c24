"""Sitemaps: the pure parser's limits and safety, and the lastmod change signal."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Link, Url
from crawlcore.selectors import urls_orphaned, urls_orphaned_count
from crawlcore.services.sweep import active_candidates
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.robots import rules_from_text, sitemap_urls
from crawler.sitemap import MAX_URLS, Kind, SitemapError, inflate, parse, parse_lastmod

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, extra: str = "") -> bytes:
    items = "".join(f"<url><loc>{u}</loc>{extra}</url>" for u in locs)
    return f"<?xml version='1.0'?><urlset {NS}>{items}</urlset>".encode()


def test_urlset_keeps_lastmod_changefreq_priority():
    body = urlset(
        "http://a/x", extra="<lastmod>2026-03-01</lastmod><changefreq>Daily</changefreq><priority>0.8</priority>"
    )
    (entry,) = parse(body).entries
    assert entry.lastmod == datetime(2026, 3, 1, tzinfo=UTC) and entry.changefreq == "daily" and entry.priority == 0.8


def test_bad_values_are_dropped_not_fatal():
    body = urlset("http://a/x", extra="<lastmod>soon</lastmod><changefreq>often</changefreq><priority>7</priority>")
    (entry,) = parse(body).entries
    assert entry.lastmod is None and entry.changefreq == "" and entry.priority is None


def test_gzip_index_and_text():
    index = gzip.compress(f"<sitemapindex {NS}><sitemap><loc>http://a/s.xml</loc></sitemap></sitemapindex>".encode())
    parsed = parse(index)
    assert parsed.kind == Kind.INDEX and [e.loc for e in parsed.entries] == ["http://a/s.xml"]
    text = parse(b"http://a/1\n\nhttps://a/2\r\n")
    assert text.kind == Kind.TEXT and [e.loc for e in text.entries] == ["http://a/1", "https://a/2"]
    with pytest.raises(SitemapError, match="text sitemap"):
        parse(b"hello\nworld")


def test_more_than_50000_urls_are_cut_and_said():
    parsed = parse("".join(f"http://a/{k}\n" for k in range(MAX_URLS + 5)).encode())
    assert len(parsed.entries) == MAX_URLS and "more than 50000" in parsed.error


def test_a_gzip_bomb_stops_at_50_mb_uncompressed():
    bomb = gzip.compress(b" " * (50 * 1024 * 1024 + 10), compresslevel=9)
    assert len(bomb) < 100_000
    with pytest.raises(SitemapError, match="uncompressed"):
        inflate(bomb)


def _peak(fn) -> tuple[object, int]:
    """What `fn()` returns, and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _gzip_stream(parts, count: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(z.compress(parts(k)) for k in range(count)), z.flush()])


# A file is read as it is inflated: what parsing one costs is a few chunks, not the file.
PEAK_BOUND = 16 * 1024 * 1024


def test_a_small_gzip_of_50_mb_of_blank_lines_is_not_held_whole():
    body = _gzip_stream(lambda k: b"http://a/first\n" if k == 0 else b"\n" * (1024 * 1024), 48)
    assert len(body) < 100_000
    parsed, peak = _peak(lambda: parse(body))
    assert [e.loc for e in parsed.entries] == ["http://a/first"]
    assert peak < PEAK_BOUND, f"peak {peak} bytes"


def test_xml_padded_to_50_mb_is_read_as_it_is_inflated():
    pad = b" " * (1024 * 1024)

    def part(k: int) -> bytes:
        if k == 0:
            return f"<urlset {NS}>".encode()
        return b"</urlset>" if k == 47 else b"<url><loc>http://a/%d</loc></url>" % k + pad

    body = _gzip_stream(part, 48)
    parsed, peak = _peak(lambda: parse(body))
    assert parsed.kind == Kind.URLSET and len(parsed.entries) == 46
    assert peak < PEAK_BOUND, f"peak {peak} bytes"


@pytest.mark.parametrize("xml", [False, True], ids=["text", "xml"])
def test_reading_stops_at_50000_urls(xml):
    if xml:
        body = _gzip_stream(lambda k: (f"<urlset {NS}>" if k == 0 else "").encode() + b"".join(
            b"<url><loc>http://a/%d/%d</loc></url>" % (k, i) for i in range(1000)), 200)  # fmt: skip
    else:
        body = _gzip_stream(lambda k: b"".join(b"http://a/%d/%d\n" % (k, i) for i in range(1000)), 200)
    parsed, peak = _peak(lambda: parse(body))
    assert len(parsed.entries) == MAX_URLS and "more than 50000" in parsed.error
    assert peak < 64 * 1024 * 1024, f"peak {peak} bytes"  # the 50,000 entries themselves


def test_a_line_without_end_is_refused_early():
    with pytest.raises(SitemapError, match="longer than"):
        parse(_gzip_stream(lambda k: b"x" * (1024 * 1024), 40))


def test_entities_are_never_expanded_or_fetched():
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b"<urlset><url><loc>http://a/&b;</loc></url></urlset>"
    )
    with pytest.raises(SitemapError, match="entities"):
        parse(laughs)
    with pytest.raises(SitemapError, match="bad XML"):
        parse(b"<urlset><url><loc>http://a/</loc></url>")
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse(b"<html><body>soft 404</body></html>")


def test_lastmod_w3c_forms():
    assert parse_lastmod("2026") == datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_lastmod("2026-05") == datetime(2026, 5, 1, tzinfo=UTC)
    assert parse_lastmod("2026-05-02T10:00:00Z") == datetime(2026, 5, 2, 10, tzinfo=UTC)
    assert parse_lastmod("2026-05-02T10:00+02:00") == datetime(2026, 5, 2, 8, tzinfo=UTC)
    assert parse_lastmod("") is None and parse_lastmod("x" * 100) is None


def test_robots_sitemap_lines_made_absolute():
    rules = rules_from_text("User-agent: *\nDisallow:\nSitemap: /s.xml\nSitemap: ftp://x/y\nsitemap: http://b/s.xml\n")
    assert sitemap_urls(rules=rules, base="http://a:81/robots.txt") == ["http://a:81/s.xml", "http://b/s.xml"]


@pytest.mark.django_db
def test_lastmod_newer_than_the_last_check_makes_a_url_due_for_the_active_scan():
    now = timezone.now()
    ids = urls_insert(urls=[NewUrl(f"http://a.example/{k}", depth=0) for k in range(3)]).ids
    Url.objects.update(
        state="visited", next_check_at=None, last_checked_at=now - timedelta(minutes=30)
    )  # not stale yet
    changed, old, none = (ids[f"http://a.example/{k}"] for k in range(3))
    Url.objects.filter(id=changed).update(sitemap_lastmod=now - timedelta(minutes=5), in_sitemap=True)
    Url.objects.filter(id=old).update(sitemap_lastmod=now - timedelta(hours=5), in_sitemap=True)
    assert active_candidates(now=now, limit=10) == [changed]
    Url.objects.filter(id=changed).update(last_checked_at=now)  # the scan checked it: due no more
    assert active_candidates(now=now, limit=10) == []


@pytest.mark.django_db
def test_orphans_are_sitemap_urls_no_page_links_to():
    ids = urls_insert(urls=[NewUrl(f"http://a.example/{p}", depth=0) for p in ("", "linked", "orphan", "self")]).ids
    Url.objects.filter(
        id__in=[ids["http://a.example/linked"], ids["http://a.example/orphan"], ids["http://a.example/self"]]
    ).update(in_sitemap=True)
    Link.objects.create(from_url_id=ids["http://a.example/"], to_url_id=ids["http://a.example/linked"])
    Link.objects.create(from_url_id=ids["http://a.example/self"], to_url_id=ids["http://a.example/self"])
    server_id = Url.objects.get(id=ids["http://a.example/"]).server_id
    assert [o["url"] for o in urls_orphaned(server_id=server_id)] == [
        "http://a.example/orphan",
        "http://a.example/self",
    ]
    assert urls_orphaned_count(server_id=server_id) == 2


@pytest.mark.django_db
def test_site_report_shows_the_orphans(client):
    from django.contrib.auth.models import Group, User

    ids = urls_insert(urls=[NewUrl(u, depth=0) for u in ("http://a.example/", "http://a.example/only-in-sitemap")]).ids
    Url.objects.filter(id=ids["http://a.example/only-in-sitemap"]).update(in_sitemap=True, sitemap_changefreq="weekly")
    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    server_id = Url.objects.get(id=ids["http://a.example/"]).server_id
    page = client.get(f"/dashboard/dead-links/{server_id}/").content.decode()
    assert "Orphan pages" in page and "http://a.example/only-in-sitemap" in page and "weekly" in page
