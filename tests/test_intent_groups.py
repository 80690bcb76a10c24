"""The load agent commits the intent rows of its next requests together (ServerVisit.reserve), one
statement for a group; still exactly one StatusCheck row per request the server saw, and none for the
requests a stopped batch never sent."""

from __future__ import annotations

import pytest

from crawladmin.embedded import Gate
from crawlcore.models import Server, StatusCheck
from crawlcore.services import request_records
from crawlcore.services.load import load_server_batch
from crawlcore.services.urls import NewUrl, urls_insert
from crawlcore.services.visit import ServerVisit
from crawler.lifecycle import Agent
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db


def _groups(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = request_records.checks_begin

    def spy(**kw):
        sizes.append(len(kw["requests"]))
        return real(**kw)

    monkeypatch.setattr("crawlcore.services.visit.checks_begin", spy)
    return sizes


def test_a_batch_stopped_half_way_has_one_check_per_request_sent_and_no_intent_left(settings, monkeypatch):
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_BATCH_SIZE = 10
    groups = _groups(monkeypatch)
    with TestWebServer(SiteSpec(n_servers=1, first_octet=196, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        urls = [seed] + [f"{seed}missing-{i}.html" for i in range(9)]
        urls_insert(urls=[NewUrl(u, depth=0) for u in urls], trusted=True)
        gate = Gate()
        gate.reset(budget=6)  # six pages, then the batch stops with reserved intents not sent
        outcome = load_server_batch(server_id=Server.objects.get().id, owner="w", gate=gate)
        sent = sorted((web.url_of(r), r.method) for r in web.access_log())
    assert outcome.fetched + outcome.failed == 6
    assert any(size > 1 for size in groups), groups  # a fast local server: several intents a statement
    assert sum(groups) > 6  # more were reserved than sent ...
    recorded = sorted(StatusCheck.objects.values_list("requested_url", "method"))
    assert recorded == sent  # ... and only the sent ones are on the record, each once
    assert not StatusCheck.objects.filter(category=StatusCheck.PENDING).exists()


def test_a_visit_sends_each_reserved_request_under_its_own_intent_and_discards_the_rest(settings):
    settings.CRAWL_DEFAULT_DELAY = 0
    with TestWebServer(SiteSpec(n_servers=1, first_octet=197, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        urls_insert(urls=[NewUrl(seed, depth=0)], trusted=True)
        server = Server.objects.get()
        visit = ServerVisit(server, "w", Agent.LOAD)
        visit.reserve([seed, f"{seed}missing-1.html", f"{seed}missing-2.html"])
        pending = list(StatusCheck.objects.filter(category=StatusCheck.PENDING).values_list("id", flat=True))
        assert len(pending) == 3  # committed before any request goes out
        result = visit.fetch(seed)
        assert result.check_id in pending  # the request took its reserved row, no new one
        assert StatusCheck.objects.count() == 3
        visit.record(result, url_id=None)
        visit.close()
    assert list(StatusCheck.objects.values_list("requested_url", "category")) == [(seed, "normal")]


def test_no_intent_is_committed_for_a_url_robots_txt_disallows(settings, monkeypatch):
    """A group's intents cover the next URLs of the batch; one robots.txt disallows is never sent, so it gets no
    intent either. It used to get one, discarded only when the visit closed: a worker killed meanwhile (or a
    database gone at the close) left a check for a request never sent, begun long before the blow (the chaos
    crawl, 30 Nov: two /private/ pages)."""
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_BATCH_SIZE = 20
    reserved: list[str] = []
    real = request_records.checks_begin

    def spy(**kw):
        reserved.extend(url for url, _ in kw["requests"])
        return real(**kw)

    monkeypatch.setattr("crawlcore.services.visit.checks_begin", spy)
    # As a kill before the close would leave them: intents not sent stay.
    monkeypatch.setattr("crawlcore.services.visit.checks_discard", lambda **kw: None)
    with TestWebServer(SiteSpec(n_servers=1, first_octet=198, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        # The batch takes them by depth: the private pages come between the others, within a group's reach.
        allowed = [f"{seed}missing-{i}.html" for i in range(12)]
        urls_insert(urls=[NewUrl(u, depth=0) for u in [seed, *allowed[:3]]], trusted=True)
        urls_insert(urls=[NewUrl(f"{seed}private/{i}.html", depth=1) for i in range(3)], trusted=True)
        urls_insert(urls=[NewUrl(u, depth=2) for u in allowed[3:]], trusted=True)
        outcome = load_server_batch(server_id=Server.objects.get().id, owner="w", gate=Gate())
        sent = sorted((web.url_of(r), r.method) for r in web.access_log() if not r.path.startswith("/robots"))
    assert (outcome.excluded, outcome.fetched + outcome.failed) == (3, 1 + len(allowed))
    assert len(reserved) > 1 and not [u for u in reserved if "/private/" in u], reserved
    recorded = sorted(StatusCheck.objects.exclude(requested_url__endswith="/robots.txt")
                      .values_list("requested_url", "method"))  # fmt: skip
    assert recorded == sent
