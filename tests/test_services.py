"""The data layer's guarantees, step by step, on SQLite (the cluster tests repeat them on PostgreSQL)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from crawladmin.models import Server, StatusCheck, Url, UrlEvent
from crawladmin.services.dispatch import dispatch_due, reconcile
from crawladmin.services.load import load_server_batch
from crawladmin.services.servers import server_claim
from crawladmin.services.urls import NewUrl, url_transition, urls_claim, urls_insert
from crawler.lifecycle import Agent, Event, State
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db


def _insert(*urls: str, trusted: bool = False) -> dict[str, int]:
    return urls_insert(urls=[NewUrl(u, depth=0) for u in urls], trusted=trusted).ids


def test_insert_is_idempotent_and_groups_by_server():
    first = _insert("http://a.example/x", "http://a.example/y", "http://b.example:8080/")
    again = _insert("http://a.example/x", "http://b.example:8080/")
    assert Url.objects.count() == 3 and Server.objects.count() == 2
    assert again["http://a.example/x"] == first["http://a.example/x"]


def test_invalid_transition_is_refused_logged_and_not_applied(caplog):
    (pk,) = _insert("http://a.example/").values()
    with caplog.at_level(logging.ERROR):
        moved = url_transition(
            url_id=pk, expected=State.INIT, event=Event.UNCHANGED, agent=Agent.ACTIVE_SCAN, owner=None
        )
    assert moved is False
    assert "refused" in caplog.text and "no transition from init on unchanged" in caplog.text
    assert Url.objects.get(pk=pk).state == "init" and not UrlEvent.objects.exists()


def test_two_agents_racing_on_one_url_cannot_both_win():
    (pk,) = _insert("http://a.example/").values()
    args = dict(url_id=pk, expected=State.INIT, agent=Agent.LOAD, owner=None)
    assert url_transition(event=Event.FETCHED, **args) is True
    assert url_transition(event=Event.NO_RESPONSE, **args) is False  # the redelivered or late one
    assert Url.objects.get(pk=pk).state == "visited"
    assert list(UrlEvent.objects.values_list("from_state", "to_state")) == [("init", "visited")]


def test_transition_requires_the_lease_owner():
    ids = _insert("http://a.example/")
    server_id = Url.objects.get().server_id
    claimed = urls_claim(server_id=server_id, owner="w1", limit=10)
    assert [u.id for u in claimed] == list(ids.values())
    moved = url_transition(url_id=claimed[0].id, expected=State.INIT, event=Event.FETCHED, agent=Agent.LOAD, owner="w2")
    assert moved is False


def test_claim_is_exclusive_until_the_lease_expires():
    _insert(*(f"http://a.example/{i}" for i in range(5)))
    server_id = Server.objects.get().id
    assert len(urls_claim(server_id=server_id, owner="w1", limit=3)) == 3
    assert len(urls_claim(server_id=server_id, owner="w2", limit=10)) == 2
    later = timezone.now() + timedelta(hours=1)
    assert len(urls_claim(server_id=server_id, owner="w3", limit=10, now=later)) == 5


def test_reconciler_frees_expired_leases_of_dead_workers():
    _insert("http://a.example/1", "http://a.example/2")
    server = Server.objects.get()
    assert server_claim(server_id=server.id, owner="dead-worker") == 0
    urls_claim(server_id=server.id, owner="dead-worker", limit=10)
    assert reconcile().url_leases == 0  # not expired yet: the owner may still be working
    out = reconcile(now=timezone.now() + timedelta(hours=1))
    assert (out.url_leases, out.server_leases) == (2, 1)
    assert not Url.objects.exclude(lease_owner="").exists()


def test_dispatch_sends_a_server_once_until_redispatch_time(monkeypatch):
    sent = []
    monkeypatch.setattr("crawladmin.services.dispatch.enqueue_load_on_commit", lambda **kw: sent.append(kw))
    _insert("http://a.example/1", "http://b.example/1")
    assert dispatch_due() == 2
    assert dispatch_due() == 0  # already dispatched, message presumably in flight
    assert dispatch_due(now=timezone.now() + timedelta(hours=1)) == 2  # lost message: send again
    assert {kw["crawler_num"] for kw in sent} == {None}


def test_redelivered_load_message_does_nothing_while_another_holds_the_server():
    _insert("http://a.example/1")
    server = Server.objects.get()
    assert server_claim(server_id=server.id, owner="first") == 0
    assert load_server_batch(server_id=server.id, owner="second") is None
    assert Url.objects.get().state == "init"


def test_discovered_loopback_server_is_excluded_without_a_request(settings):
    settings.CRAWL_ALLOW_PRIVATE = ()
    with TestWebServer(SiteSpec(n_servers=1, first_octet=190, silent_server=False, slow_server=False)) as web:
        _insert(web.seeds()[0])  # as the extract agent would: not trusted
        server = Server.objects.get()
        outcome = load_server_batch(server_id=server.id, owner="w")
        assert outcome is not None and outcome.server_excluded.startswith("private address")
        assert web.access_log() == []
    url = Url.objects.get()
    assert url.exclusion_reason.startswith("private address") and url.next_check_at is None
    assert not StatusCheck.objects.exists()


def test_operator_seed_on_loopback_is_trusted(settings):
    settings.CRAWL_ALLOW_PRIVATE = ()
    settings.CRAWL_DEFAULT_DELAY = 0
    with TestWebServer(SiteSpec(n_servers=1, first_octet=191, silent_server=False, slow_server=False)) as web:
        _insert(web.seeds()[0], trusted=True)
        outcome = load_server_batch(server_id=Server.objects.get().id, owner="w")
        assert outcome is not None and outcome.fetched == 1
        assert [r.path for r in web.access_log()] == ["/robots.txt", "/"]
    assert Url.objects.get().state == "visited"
