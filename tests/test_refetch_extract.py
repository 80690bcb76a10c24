"""A re-fetch that brings back the body already stored (same checksum) keeps what extraction found on it:
the page is not parsed again, its links, title and index are not written again. A new body, or the same
bytes now served as HTML, is extracted. On SQLite; tests/test_load_writes_pg.py holds the PostgreSQL write."""

from __future__ import annotations

import hashlib

import pytest
from django.utils import timezone

from crawlcore.models import Page
from crawlcore.services.extract import pages_extract
from crawlcore.services.pages import pages_store
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.http import FetchResult, Timings

pytestmark = pytest.mark.django_db

URL = "http://a.example/p"
BODY = b'<html><head><title>First</title></head><body><a href="/q">q</a></body></html>'


def fetched(body: bytes, content_type: str = "text/html") -> FetchResult:
    return FetchResult(
        url=URL, method="GET", status=200, headers={"content-type": content_type}, body=body, failure=None,
        detail="", truncated=False, bytes_received=len(body), timings=Timings(None, None, None, None, 1.0),
        peer_ip=None,
    )  # fmt: skip


def store(url_id: int, body: bytes, content_type: str = "text/html") -> list[int]:
    return pages_store([(url_id, fetched(body, content_type), hashlib.sha1(body).hexdigest())], now=timezone.now())


@pytest.fixture
def url_id() -> int:
    return urls_insert(urls=[NewUrl(URL, depth=0)]).ids[URL]


def test_the_same_body_again_is_not_extracted_again(url_id):
    pages_extract(page_ids=store(url_id, BODY))
    first = Page.objects.get(url_id=url_id)
    assert first.title == "First" and first.extracted_at is not None

    assert store(url_id, BODY) == []  # nothing to extract
    page = Page.objects.get(url_id=url_id)
    assert (page.title, page.extracted_at, page.extract_dispatched_at) == (
        "First",
        first.extracted_at,
        first.extract_dispatched_at,
    )
    assert page.revisit_at is not None  # still recorded as a revisit of the first copy


def test_the_same_body_before_its_first_extraction_is_still_to_extract(url_id):
    (first,) = store(url_id, BODY)
    assert store(url_id, BODY) == [first]
    pages_extract(page_ids=[first])
    assert Page.objects.get(url_id=url_id).title == "First"


def test_a_new_body_is_extracted(url_id):
    pages_extract(page_ids=store(url_id, BODY))
    (again,) = store(url_id, BODY.replace(b"First", b"Second"))
    assert Page.objects.get(id=again).extracted_at is None
    pages_extract(page_ids=[again])
    assert Page.objects.get(id=again).title == "Second"


def test_the_same_bytes_now_served_as_html_are_extracted(url_id):
    assert store(url_id, BODY, "text/plain") == []  # nothing to extract from plain text: done at once
    (again,) = store(url_id, BODY)
    pages_extract(page_ids=[again])
    assert Page.objects.get(id=again).title == "First"


def test_a_rendering_is_kept_with_its_body_and_dropped_with_a_new_one(url_id):
    import zlib

    pages_extract(page_ids=store(url_id, BODY))
    Page.objects.filter(url_id=url_id).update(
        dom_z=zlib.compress(b"<html><title>Rendered</title></html>"), rendered_at=timezone.now(),
        render_reason="thin_text",
    )  # fmt: skip
    store(url_id, BODY)  # the same body: its rendering still stands
    kept = Page.objects.get(url_id=url_id)
    assert kept.dom_z is not None and kept.rendered_at is not None and kept.render_reason == "thin_text"
    store(url_id, BODY.replace(b"First", b"Second"))  # a new body: rendered again if it needs it
    new = Page.objects.get(url_id=url_id)
    assert new.dom_z is None and new.rendered_at is None and new.render_reason == ""
