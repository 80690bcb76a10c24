"""A URL answered 429 or 503 + Retry-After: its server pauses, and that URL moves along its life-cycle (a
failure counted, on its own back-off), so when the pause ends the server's other URLs are asked for and it
does not stand first in line again. The load agent and both scans, on SQLite, against a loopback server
where one URL answers so and every other 200. Time passing is written into the rows (the server's pause
and the URLs' back-offs end at once), so no test waits out a Retry-After."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Server, ServerHealth, StatusCheck, Url, UrlEvent
from crawlcore.services.load import load_server_batch
from crawlcore.services.scan import scan_server_batch
from crawlcore.services.sweep import scan_sweep
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.lifecycle import Agent
from crawler.urlnorm import canonicalize
from testweb.scan import Resource, ScanWeb

pytestmark = pytest.mark.django_db

PAGES = 12


@pytest.fixture
def fast(settings, monkeypatch) -> list[dict]:
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_REVISIT_AFTER = 0
    settings.CRAWL_BATCH_SIZE = 4
    settings.CRAWL_CONNECT_TIMEOUT = settings.CRAWL_HEADER_TIMEOUT = 5
    settings.CRAWL_NR1_BACKOFF, settings.CRAWL_NR2_BACKOFF = 3600, 21600
    messages: list[dict] = []
    monkeypatch.setattr("crawlcore.services.sweep.enqueue_scan_on_commit", lambda **kw: messages.append(kw))
    monkeypatch.setattr("crawlcore.services.agent.servers_dispatch_with_due_work", lambda **kw: 0)
    monkeypatch.setattr("crawlcore.services.load.enqueue_extract_on_commit", lambda **kw: None)
    return messages


@pytest.fixture
def web():
    with ScanWeb("127.0.0.78") as w:
        yield w


def _pause_over(server_id: int) -> None:
    """The server's pause is over (as if Retry-After's seconds had passed); the URLs' own back-offs are not."""
    Server.objects.filter(id=server_id).update(next_request_at=None)
    ServerHealth.objects.filter(server_id=server_id).update(limited_until=None)


def _site(web: ScanWeb, retry: Resource) -> tuple[Url, list[Url]]:
    """`/0.html` answers `retry`, `/1.html` … 200; `/0.html` is first in line (lowest id, same depth)."""
    web.pages["/0.html"] = retry
    for i in range(1, PAGES):
        web.pages[f"/{i}.html"] = Resource()
    urls_insert(urls=[NewUrl(canonicalize(web.url("/0.html")), depth=1)], trusted=True)
    urls_insert(urls=[NewUrl(canonicalize(web.url(f"/{i}.html")), depth=1) for i in range(1, PAGES)], trusted=True)
    first = Url.objects.get(url=canonicalize(web.url("/0.html")))
    rest = list(Url.objects.exclude(id=first.id).order_by("id"))
    assert all(u.id > first.id for u in rest)
    return first, rest


@pytest.mark.parametrize(
    "retry",
    [Resource(status=503, headers={"Retry-After": "120"}), Resource(status=429, headers={"Retry-After": "120"})],
    ids=["503", "429"],
)
def test_load_a_url_answered_retry_after_moves_on_and_the_servers_other_urls_are_fetched(fast, web, retry):
    first, rest = _site(web, retry)
    server_id = first.server_id
    outcome = load_server_batch(server_id=server_id, owner="loader")
    assert outcome is not None and outcome.backed_off
    server = Server.objects.get(id=server_id)
    assert server.next_request_at > timezone.now() + timedelta(seconds=100)  # the server's pause holds
    first.refresh_from_db()
    assert (first.state, first.failure_count, first.last_status) == ("noresponse1", 1, retry.status)
    assert first.next_check_at > timezone.now() + timedelta(seconds=3500)  # its own back-off
    assert first.lease_owner == ""
    assert list(UrlEvent.objects.filter(url=first).values_list("from_state", "to_state", "agent")) == [
        ("init", "noresponse1", "load")
    ]
    assert load_server_batch(server_id=server_id, owner="loader") is None  # held: nobody asks during the pause

    for _round in range(PAGES):  # bounded: a batch of 4 a round
        _pause_over(server_id)
        outcome = load_server_batch(server_id=server_id, owner="loader")
        if outcome is None or outcome.fetched == 0:
            break
    assert {u.state for u in Url.objects.filter(id__in=[u.id for u in rest])} == {"visited"}
    assert web.requests("/0.html") == [("GET", retry.status)]  # asked once, not after every pause
    assert StatusCheck.objects.filter(url=first, status_code=retry.status).count() == 1


def test_load_the_retry_after_url_still_waits_for_the_pause_when_its_own_back_off_is_shorter(fast, web, settings):
    settings.CRAWL_NR1_BACKOFF = 10
    first, _rest = _site(web, Resource(status=503, headers={"Retry-After": "600"}))
    load_server_batch(server_id=first.server_id, owner="loader")
    first.refresh_from_db()
    assert first.state == "noresponse1"
    assert first.next_check_at > timezone.now() + timedelta(seconds=590)


def _loaded_site(fast, web: ScanWeb, retry: Resource) -> tuple[Url, list[Url]]:
    """Every page loaded (Visited), then `/0.html` starts answering `retry`."""
    first, rest = _site(web, Resource())
    for _round in range(PAGES):
        outcome = load_server_batch(server_id=first.server_id, owner="loader")
        if outcome is None or outcome.fetched == 0:
            break
    assert set(Url.objects.values_list("state", flat=True)) == {"visited"}
    web.pages["/0.html"] = retry
    web.hits.clear()
    return first, rest


def _scan(sent: list[dict], agent: Agent, *, now=None) -> None:
    sent.clear()
    scan_sweep(agent=agent, now=now)
    for m in sent:
        scan_server_batch(agent=agent, server_id=m["server_id"], url_ids=m["url_ids"], owner="w")


def test_active_scan_the_retry_after_url_moves_on_and_the_others_are_rechecked(fast, web):
    first, rest = _loaded_site(fast, web, Resource(status=503, headers={"Retry-After": "120"}))
    before = {u.id: u.last_checked_at for u in Url.objects.all()}
    _scan(fast, Agent.ACTIVE_SCAN)
    first.refresh_from_db()
    assert (first.state, first.failure_count, first.last_status) == ("noresponse1", 1, 503)
    assert first.next_check_at > timezone.now() + timedelta(seconds=3500)
    for _round in range(PAGES):
        _pause_over(first.server_id)
        _scan(fast, Agent.ACTIVE_SCAN, now=timezone.now() + timedelta(seconds=121))  # the others' wait is over
        if all(u.last_checked_at > before[u.id] for u in Url.objects.filter(id__in=[r.id for r in rest])):
            break
    rechecked = Url.objects.filter(id__in=[r.id for r in rest])
    assert all(u.last_checked_at > before[u.id] and u.state == "visited" for u in rechecked)
    assert len(web.requests("/0.html")) == 1  # not asked again after each pause


def test_inactive_scan_the_retry_after_url_steps_towards_dead_on_its_own_back_off(fast, web):
    first, _rest = _loaded_site(fast, web, Resource(status=500))
    _scan(fast, Agent.ACTIVE_SCAN)
    first.refresh_from_db()
    assert (first.state, first.failure_count) == ("noresponse1", 1)
    web.pages["/0.html"] = Resource(status=429, headers={"Retry-After": "120"})
    in_1h = timezone.now() + timedelta(seconds=3601)
    _scan(fast, Agent.INACTIVE_SCAN, now=in_1h)
    first.refresh_from_db()
    assert (first.state, first.failure_count, first.last_status) == ("noresponse2", 2, 429)
    assert first.next_check_at > timezone.now() + timedelta(seconds=21500)
    assert Server.objects.get(id=first.server_id).next_request_at > timezone.now() + timedelta(seconds=100)
