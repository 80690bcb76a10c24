"""crawlcore.services.operator: the writes behind the admin's actions, called directly. Each changes only
what it should, says how much it changed, changes nothing the second time, and leaves a URL a worker
holds to that worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Server, Url, UrlEvent
from crawlcore.services import operator
from crawlcore.services.urls import NewUrl, urls_insert

pytestmark = pytest.mark.django_db


@pytest.fixture
def ids():
    ids = urls_insert(
        urls=[
            NewUrl(u, depth=0)
            for u in ("http://a.example/", "http://a.example/dead", "http://a.example/nr1", "http://b.example/")
        ],
        trusted=True,
    ).ids
    Url.objects.filter(id=ids["http://a.example/dead"]).update(state="dead", failure_kind="refused")
    Url.objects.filter(id=ids["http://a.example/nr1"]).update(state="noresponse1", next_check_at=None)
    return ids


def _servers() -> list[int]:
    return list(Server.objects.order_by("id").values_list("id", flat=True))


def test_enable_disable_and_pin_report_only_what_changed(ids):
    servers = _servers()
    assert operator.servers_set_enabled(server_ids=servers[:1], enabled=False) == 1
    assert operator.servers_set_enabled(server_ids=servers, enabled=False) == 1  # the other one
    assert not Server.objects.filter(enabled=True).exists()
    assert operator.servers_pin(server_ids=servers, crawler_num=3) == 2
    assert operator.servers_pin(server_ids=servers, crawler_num=3) == 0
    assert operator.servers_pin(server_ids=servers[:1], crawler_num=None) == 1
    assert list(Server.objects.order_by("id").values_list("crawler_num", flat=True)) == [None, 3]


def test_revive_dead_urls_of_servers_moves_only_dead_ones(ids):
    a = Server.objects.get(host="a.example").id
    assert operator.servers_revive_dead(server_ids=[a]) == 1
    assert Url.objects.get(id=ids["http://a.example/dead"]).state == "init"
    assert Url.objects.get(id=ids["http://a.example/nr1"]).state == "noresponse1"
    assert UrlEvent.objects.filter(from_state="dead", to_state="init", agent="admin").count() == 1
    assert operator.servers_revive_dead(server_ids=[a]) == 0


def test_revive_and_requeue_urls(ids):
    dead, nr1, home = ids["http://a.example/dead"], ids["http://a.example/nr1"], ids["http://a.example/"]
    assert operator.urls_revive_dead(url_ids=[dead, nr1, home]) == [dead]
    assert operator.urls_requeue(url_ids=[nr1]) == 1
    assert Url.objects.get(id=nr1).next_check_at is not None
    Url.objects.filter(id=home).update(lease_owner="worker-1", lease_expires_at=timezone.now() + timedelta(minutes=5))
    assert operator.urls_requeue(url_ids=[home]) == 0  # a worker holds it


def test_exclude_leaves_leased_and_already_excluded_urls(ids):
    home, nr1, b = ids["http://a.example/"], ids["http://a.example/nr1"], ids["http://b.example/"]
    Url.objects.filter(id=b).update(lease_owner="worker-1", lease_expires_at=timezone.now() + timedelta(minutes=5))
    assert operator.urls_exclude(url_ids=[home, nr1, b]) == sorted([home, nr1])
    assert operator.urls_exclude(url_ids=[home, nr1]) == []
    excluded = Url.objects.get(id=nr1)
    assert excluded.exclusion_reason == operator.OPERATOR_EXCLUSION and excluded.state == "noresponse1"
    assert Url.objects.get(id=b).exclusion_reason == ""
