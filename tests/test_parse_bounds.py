"""What one page may cost the extract agent is bounded: the bytes parsed, the attributes of one tag, the
nesting and the links. A page over a bound is parsed up to it, says which bound (`Extracted.limits`, and
its URL's failure kind), and keeps its links up to the bound; links past the bound of links followed are
recorded as not followed, with the reason. A batch whose parse takes a while is not taken for lost by the
reconciler and parsed a second time beside the first."""

from __future__ import annotations

import threading
import time
import zlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from crawlcore.models import Link, Page, Url
from crawlcore.selectors import crawl_summary
from crawlcore.services.extract import pages_extract
from crawlcore.services.load_dispatch import reconcile
from crawlcore.services.urls import NewUrl, urls_insert
from crawler import notfollowed
from crawler.child_pool import run_pooled
from crawler.parse import MAX_LINKS, MAX_TAG_ATTRIBUTES, OVER_LIMIT, PARSE_MAX_BYTES, extract
from tests import parse_hooks

PAGE = "http://example.com/dir/page.html"
# Generous: libxml2 alone takes tens of seconds on the 100,000-attribute tag; bounded, it is a fraction of one.
QUICK = 10.0


def _attributes(n: int, form: str = 'a{i}="x"', sep: str = " ") -> str:
    return sep.join(form.format(i=i) for i in range(n))


@pytest.mark.parametrize(
    ("form", "sep"),
    [('a{i}="x"', " "), ("a{i}", " "), ('a{i}=">"', "/"), ("a{i}='<b>'", ""), ("a{i}=x", "\n"),
     ('"a{i}', " "), ("'a{i}='x'", " "), ("=a{i}", " "), ("<a{i}", " ")],
    ids=["quoted", "bare", "gt-in-value-slash-separated", "single-quoted-no-separator", "unquoted",
         "name-starts-with-a-quote", "name-starts-with-an-apostrophe", "name-starts-with-equals",
         "name-starts-with-lt"],  # fmt: skip
)
def test_one_tag_of_100000_attributes_is_cut_down_and_its_page_links_kept(form, sep):
    body = f"<html><body><a href='/before'>b</a><div {_attributes(100_000, form, sep)}>hi</div>"
    body += "<a href='/after'>a</a></body></html>"
    started = time.monotonic()
    out = extract(body.encode(), PAGE)
    took = time.monotonic() - started
    assert took < QUICK, f"{took:.1f}s"
    assert out.limits == ["attributes"]
    assert out.urls == ["http://example.com/before", "http://example.com/after"]


def test_a_page_of_480000_quote_named_attributes_is_classified_within_a_second():
    # 3.3 MB: one tag of names that start with a quote, which libxml2 keeps as attributes, one by one.
    body = b"<html><body><p" + b"".join(b' "%d' % i for i in range(480_000)) + b"><a href='/after'>a</a>"
    assert 3_000_000 < len(body) < PARSE_MAX_BYTES
    started = time.monotonic()
    out = extract(body, PAGE)
    assert time.monotonic() - started < 1.0
    assert out.limits == ["attributes"]


def test_a_tag_at_the_attribute_bound_is_left_whole():
    body = f"<html><body><a href='/x' {_attributes(MAX_TAG_ATTRIBUTES - 1)}>x</a></body></html>".encode()
    out = extract(body, PAGE)
    assert out.limits == [] and out.urls == ["http://example.com/x"]


@pytest.mark.parametrize(
    "body",
    [
        b'<a b="' * 200_000 + b"x" * 500_000,  # every quote but the last closed by the next tag's
        b"<a b='x' c=\"" + b"<a b=' " * 200_000,  # a quote that never closes, then many tags
        b"<a " * 300_000,  # tags that never end
        b"<" * 1_000_000 + b"a" * 1_000_000,
        b"<p a=1 b=2>x</p>" * 200_000,  # many small tags: the common case, at scale
    ],
    ids=["paired-quotes", "open-quote", "unclosed-tags", "angles", "small-tags"],
)
def test_the_scan_before_the_parse_is_linear_on_hostile_bytes(body):
    started = time.monotonic()
    extract(body, PAGE)
    assert time.monotonic() - started < QUICK


def test_past_the_nesting_libxml2_keeps_the_page_is_classified():
    body = ("<div>" * 300 + "<a href='/deep'>x</a>" + "</div>" * 300).encode()
    assert extract(body, PAGE).limits == ["nesting"]


def test_past_the_bytes_parsed_the_rest_is_not_parsed():
    filler = b"<p>" + b"x" * (PARSE_MAX_BYTES + 10) + b"</p>"
    out = extract(b"<html><body><a href='/first'>f</a>" + filler + b"<a href='/last'>l</a></body></html>", PAGE)
    assert out.limits == ["bytes"]
    assert out.urls == ["http://example.com/first"]


def test_links_past_the_bound_are_kept_to_be_recorded_then_counted(monkeypatch):
    monkeypatch.setattr("crawler.parse.MAX_LINKS_RECORDED", 2000)  # the same rule, a smaller page
    n = MAX_LINKS + 2000 + 7
    body = ("<html><body>" + "".join(f"<a href='/p{i}'>l</a>" for i in range(n)) + "</body></html>").encode()
    out = extract(body, PAGE)
    assert len(out.links) == MAX_LINKS and len(out.over_limit) == 2000
    assert out.over_limit[0].url == f"http://example.com/p{MAX_LINKS}"
    assert out.rejected == {OVER_LIMIT: 7}
    assert out.limits == ["links"]


def _page(url: str, body: bytes, *, depth: int = 0) -> Page:
    (pk,) = urls_insert(urls=[NewUrl(url, depth=depth)]).ids.values()
    return Page.objects.create(
        url_id=pk, body_z=zlib.compress(body), checksum=url[-8:], fetched_at=timezone.now(),
        extract_dispatched_at=timezone.now(),
    )  # fmt: skip


@pytest.mark.django_db
def test_links_past_the_bound_are_set_aside_with_the_reason_and_counted_not_followed(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    n = MAX_LINKS + 300
    body = ("<html><body>" + "".join(f"<a href='/p{i}'>l</a>" for i in range(n)) + "</body></html>").encode()
    page = _page("http://example.com/", body)
    pages_extract(page_ids=[page.id])
    linked = Url.objects.filter(links_in__from_url_id=page.url_id)
    assert linked.count() == n and Link.objects.filter(from_url_id=page.url_id).count() == n
    assert linked.filter(exclusion_reason="").count() == MAX_LINKS
    assert linked.filter(exclusion_reason=notfollowed.TOO_MANY_LINKS).count() == 300
    assert Url.objects.get(url="http://example.com/p5000").exclusion_reason == notfollowed.TOO_MANY_LINKS
    assert crawl_summary(checks=False)["not_followed"]["example.com"][notfollowed.TOO_MANY_LINKS] == 300
    assert Url.objects.get(id=page.url_id).failure_kind == "parse:links"

    # Found again through a link that is followed (a page of few links), it is crawled after all.
    other = _page("http://example.com/other", b"<a href='/p5000'>again</a>")
    pages_extract(page_ids=[other.id])
    assert Url.objects.get(url="http://example.com/p5000").exclusion_reason == ""


@pytest.mark.django_db
def test_a_page_over_a_bound_is_classified_and_its_batch_goes_on(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    giant = _page("http://example.com/giant", f"<div {_attributes(100_000)}><a href='/g'>g</a>".encode())
    plain = _page("http://example.com/plain", b"<a href='/q'>q</a>")
    started = time.monotonic()
    pages_extract(page_ids=[giant.id, plain.id])
    assert time.monotonic() - started < QUICK
    assert Page.objects.filter(extracted_at__isnull=True).count() == 0
    assert Url.objects.get(id=giant.url_id).failure_kind == "parse:attributes"
    assert Url.objects.get(id=plain.url_id).failure_kind == ""
    assert Url.objects.filter(url__in=["http://example.com/g", "http://example.com/q"]).count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_reconciler_does_not_send_a_page_again_while_a_live_worker_parses_it(settings, monkeypatch):
    """One page whose parse takes longer than CRAWL_REDISPATCH_AFTER (within its hard bound): the worker
    keeps its claim alive while the parse runs, so the reconciler, run meanwhile as beat runs it, leaves the
    page to it instead of sending it to a second worker."""
    settings.CRAWL_REDISPATCH_AFTER = 2.0
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    monkeypatch.setattr("crawlcore.services.load_dispatch.queue_backlog", lambda queue: 0)
    resent: list[list[int]] = []
    monkeypatch.setattr(
        "crawlcore.services.load_dispatch.enqueue_extract_on_commit", lambda page_ids: resent.append(page_ids)
    )
    page = _page("http://example.com/slow", b"<a href='/l'>l</a>")
    monkeypatch.setattr("crawlcore.services.extract_parse.READER", parse_hooks.slow)  # 4.5 s a page
    stop = threading.Event()

    def reconciling() -> None:
        try:
            while not stop.wait(0.3):
                reconcile()
        finally:
            connection.close()

    beat = threading.Thread(target=reconciling)
    beat.start()
    try:
        pages_extract(page_ids=[page.id])
    finally:
        stop.set()
        beat.join(30)
    assert resent == []
    assert Page.objects.filter(extracted_at__isnull=True).count() == 0


@pytest.mark.django_db
def test_a_page_whose_parse_overruns_its_hard_bound_is_classified_and_its_batch_goes_on(settings, monkeypatch):
    """Whatever a page holds, its parse is stopped at CRAWL_PARSE_TIMEOUT (a child process, killed): the page
    is classified over the bound and extracted, and the pages after it are parsed."""
    settings.CRAWL_PARSE_TIMEOUT = 1.0
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    stuck = _page("http://example.com/stuck", b"<a href='/s'>s</a>")
    after = _page("http://example.com/after", b"<a href='/a'>a</a>")
    # /stuck sleeps 120 s in its parse: a parse no bound of crawler.parse foresaw
    monkeypatch.setattr("crawlcore.services.extract_parse.READER", parse_hooks.stuck_on_stuck)
    started = time.monotonic()
    pages_extract(page_ids=[stuck.id, after.id])
    assert time.monotonic() - started < QUICK
    assert Page.objects.filter(extracted_at__isnull=True).count() == 0
    assert Url.objects.get(id=stuck.url_id).failure_kind == "parse:time"
    assert Page.objects.get(id=stuck.id).extract_problem == "parse_time"
    assert Url.objects.filter(url="http://example.com/a").exists()


def _dispatch_writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith("UPDATE") and "extract_dispatched_at" in q["sql"]]


@pytest.mark.django_db
def test_a_batch_taken_up_soon_after_it_was_sent_writes_no_dispatch_time(settings, monkeypatch):
    """The alive mark is for a batch at risk of being sent again; one taken up at once must not update every
    page a second time (a new row version a page crawled)."""
    settings.CRAWL_REDISPATCH_AFTER = 60.0
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    pages = [_page(f"http://example.com/s{i}", f"<a href='/s{i}x'>l</a>".encode()) for i in range(3)]
    with CaptureQueriesContext(connection) as queries:
        pages_extract(page_ids=[p.id for p in pages])
    assert _dispatch_writes(queries.captured_queries) == []
    assert Page.objects.filter(extracted_at__isnull=True).count() == 0


@pytest.mark.django_db
def test_a_batch_that_waited_less_than_half_the_redispatch_time_writes_no_dispatch_time(settings, monkeypatch):
    """Most batches of a crawl whose extraction lags wait in the queue a while; one that can still be parsed
    twice over before the reconciler could take it for lost is not written a second time either."""
    settings.CRAWL_REDISPATCH_AFTER = 60.0
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    page = _page("http://example.com/queued", b"<a href='/q'>q</a>")
    Page.objects.filter(id=page.id).update(extract_dispatched_at=timezone.now() - timedelta(seconds=20))
    with CaptureQueriesContext(connection) as queries:
        pages_extract(page_ids=[page.id])
    assert _dispatch_writes(queries.captured_queries) == []
    assert Page.objects.get(id=page.id).extracted_at is not None


@pytest.mark.django_db
def test_a_batch_that_waited_in_the_queue_says_it_is_alive_before_parsing(settings, monkeypatch):
    settings.CRAWL_REDISPATCH_AFTER = 60.0
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    page = _page("http://example.com/waited", b"<a href='/w'>w</a>")
    Page.objects.filter(id=page.id).update(extract_dispatched_at=timezone.now() - timedelta(seconds=50))
    seen: list = []
    real = run_pooled

    def watching(*args, **kw):  # the parse starts here, in a pooled process: what the worker said before it
        seen.append(Page.objects.get(id=page.id).extract_dispatched_at)
        return real(*args, **kw)

    monkeypatch.setattr("crawlcore.services.extract_parse.run_pooled", watching)
    pages_extract(page_ids=[page.id])
    assert seen and timezone.now() - seen[0] < timedelta(seconds=10)
