"""What a hostile site can make the crawler do or store: robots.txt `Sitemap:` lines send it only to the
server's own host (or its registered domain, when CRAWL_SITEMAP_DOMAIN says so), and titles and anchor texts
are stored without control characters, and shown on a terminal without acting on it."""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import pytest
from django.utils import timezone

from crawlcore.models import Link, Page, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.sitemaps import SitemapReader
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.brokenlinks import neutralised
from crawler.sanitize import clean_label, terminal_safe
from testweb.monitor import scripted
from testweb.sitemaps import SitemapSite, SitemapSiteSpec

from .crawlcheck import clean_env, run_crawl

HOSTILE_TITLE = "\x1b]0;pwned\x07Hello\x1b[2J \x9b31mworld"


def test_robots_sitemap_lines_naming_other_hosts_are_never_requested(tmp_path):
    with scripted("127.0.0.66", [200]) as third:
        listed = tuple(f"{third.url}sitemap-{k}.xml" for k in range(5))
        with SitemapSite(SitemapSiteSpec(host="127.0.0.67", robots_sitemaps=listed)) as site:
            run_crawl(clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path)), f"{site.origin}/")
            own = [p for p in site.requests if p.startswith("/maps/")]
    assert third.connections == 0
    assert "/maps/index.xml.gz" in own  # the server's own sitemaps are still read


@pytest.mark.parametrize(
    ("listed", "domain", "ours"),
    [
        ("https://www.example.org/sitemap.xml", False, True),  # the same host, another scheme
        ("http://www.example.org:8080/s.xml", False, True),
        ("http://sitemaps.example.org/s.xml", False, False),
        ("http://sitemaps.example.org/s.xml", True, True),
        ("http://example.org.evil.net/s.xml", True, False),
        ("http://evil.net/s.xml", True, False),
        ("http://[::1/s.xml", True, False),
    ],
)
def test_which_robots_sitemap_lines_are_ours(settings, listed, domain, ours):
    settings.CRAWL_SITEMAP_DOMAIN = domain
    reader = SimpleNamespace(server=SimpleNamespace(host="www.example.org"))
    assert SitemapReader._listed_sitemap_ours(reader, listed) is ours


@pytest.mark.django_db
def test_titles_and_anchor_texts_are_stored_without_control_characters(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    (pk,) = urls_insert(urls=[NewUrl("http://example.com/", depth=0)]).ids.values()
    html = (
        f"<title>{HOSTILE_TITLE}</title><meta name=description content='a\x07b'>"
        "<a href='/next'>click\x1b[31m here\x07</a><a href='/other#x'>to\x1bx</a>"
    ).encode()
    page = Page.objects.create(url_id=pk, body_z=zlib.compress(html), checksum="c", fetched_at=timezone.now())
    pages_extract(page_ids=[page.id])
    page.refresh_from_db()
    assert page.title == "]0;pwnedHello[2J 31mworld" and page.description == "ab"
    texts = set(Link.objects.filter(from_url_id=pk).values_list("anchor_text", flat=True))
    assert texts == {"click[31m here", "tox"}
    assert Url.objects.filter(url="http://example.com/next").exists()


def test_terminal_output_shows_control_characters_and_never_sends_them():
    assert clean_label(HOSTILE_TITLE) == "]0;pwnedHello[2J 31mworld"
    shown = terminal_safe(HOSTILE_TITLE)
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in shown) and shown.count("\ufffd") == 4
    assert neutralised("=cmd\x1b[2J") == "'=cmd\ufffd[2J"  # CSV: no formula, no escape sequence


@pytest.mark.django_db
def test_dead_links_csv_written_to_a_terminal_carries_no_escape_sequence(capsys):
    from django.core.management import call_command

    ids = urls_insert(urls=[NewUrl(u, depth=0) for u in ("http://a.example/", "http://a.example/gone")]).ids
    Url.objects.filter(id=ids["http://a.example/gone"]).update(
        state="dead", failure_kind="http_status", last_status=404
    )
    Link.objects.create(from_url_id=ids["http://a.example/"], to_url_id=ids["http://a.example/gone"],
                        anchor_text="old\x1b]0;x\x07", element="a href")  # fmt: skip
    call_command("dead_links")
    out = capsys.readouterr().out
    assert "http://a.example/gone" in out
    assert "\x1b" not in out and "\x07" not in out
