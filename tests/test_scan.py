"""The active and inactive scans step by step on SQLite, against a tiny loopback server (testweb/scan.py):
each test loads pages with the real load agent, changes what the server answers, then runs one sweep
and the scan messages it sent, as a worker would."""

from __future__ import annotations

import zlib
from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Exchange, Page, Server, ServerHealth, StatusCheck, Url, UrlEvent
from crawlcore.selectors import crawl_progress
from crawlcore.selectors_health import server_health
from crawlcore.services.load import load_server_batch
from crawlcore.services.scan import ScanOutcome, scan_server_batch
from crawlcore.services.sweep import scan_sweep
from crawlcore.services.urls import NewUrl, urls_insert, urls_revive
from crawler.lifecycle import Agent
from crawler.urlnorm import canonicalize
from testweb.scan import Resource, ScanWeb

pytestmark = pytest.mark.django_db

ACTIVE, INACTIVE = Agent.ACTIVE_SCAN, Agent.INACTIVE_SCAN
LM1, LM2 = "Tue, 14 Nov 2023 22:13:20 GMT", "Wed, 15 Nov 2023 22:13:20 GMT"


@pytest.fixture
def sent(settings, monkeypatch) -> list[dict]:
    """Fast settings; the scan messages a sweep sends, captured instead of published."""
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_REVISIT_AFTER = 0
    settings.CRAWL_CONNECT_TIMEOUT = settings.CRAWL_HEADER_TIMEOUT = 2
    # A header-less 503 backs its server off (crawlcore.services.health): these tests step through time by
    # hand, as if each such back-off were over at once.
    settings.CRAWL_BACKOFF_BASE = 0
    messages: list[dict] = []
    monkeypatch.setattr("crawlcore.services.sweep.enqueue_scan_on_commit", lambda **kw: messages.append(kw))
    monkeypatch.setattr("crawlcore.services.agent.servers_dispatch_with_due_work", lambda **kw: 0)
    return messages


@pytest.fixture
def web():
    with ScanWeb("127.0.0.77") as w:
        yield w


def _loaded(web: ScanWeb, path: str, res: Resource, *, state: str = "visited") -> Url:
    web.pages[path] = res
    urls_insert(urls=[NewUrl(canonicalize(web.url(path)), depth=0)], trusted=True)
    url = Url.objects.get(url=canonicalize(web.url(path)))
    load_server_batch(server_id=url.server_id, owner="loader")
    url.refresh_from_db()
    assert url.state == state
    return url


def _scan(sent: list[dict], agent: Agent, *, now=None) -> list[ScanOutcome | None]:
    """One sweep for `agent`, then each message it sent, handled by a scan worker."""
    sent.clear()
    scan_sweep(agent=agent, now=now)
    assert {m["queue"] for m in sent} <= {agent.value}
    return [scan_server_batch(agent=agent, server_id=m["server_id"], url_ids=m["url_ids"], owner="w") for m in sent]


def _moves(url: Url) -> list[tuple[str, str, str]]:
    return list(UrlEvent.objects.filter(url=url).order_by("id").values_list("from_state", "to_state", "agent"))


@pytest.mark.parametrize(
    ("res", "change", "reason"),
    [
        (Resource(etag='"v1"'), lambda r: setattr(r, "etag", '"v2"'), "etag differs"),
        (Resource(last_modified=LM1), lambda r: setattr(r, "last_modified", LM2), "last-modified differs"),
        (Resource(), lambda r: setattr(r, "body", r.body + b"<!-- edit -->"), "content-length differs"),
    ],
    ids=["etag", "last-modified", "content-length"],
)
def test_head_compare_tells_unchanged_from_changed(sent, web, res, change, reason):
    url = _loaded(web, "/p.html", res)
    checked_before = url.last_checked_at
    web.hits.clear()
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert (url.state, url.next_check_at) == ("visited", None)
    assert url.last_checked_at > checked_before  # freshness reset
    assert _moves(url)[-1] == ("visited", "visited", "active_scan")

    change(res)
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    # Found changed (HEAD was enough), then reloaded by the load agent in the same visit, before its slot went back.
    assert _moves(url)[-2:] == [("visited", "init", "active_scan"), ("init", "visited", "load")]
    assert UrlEvent.objects.filter(url=url, agent="active_scan").latest("id").reason == reason
    assert url.state == "visited" and url.last_checked_at > checked_before
    assert web.requests("/p.html") == [("HEAD", 200), ("HEAD", 200), ("GET", 200)]


def test_head_refused_falls_back_to_a_conditional_get(sent, web):
    res = Resource(etag='"v1"', last_modified=LM1, head_status=405)
    url = _loaded(web, "/p.html", res)
    web.hits.clear()
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert url.state == "visited" and url.last_status == 200  # a 304 does not overwrite the page's status
    head, get = web.hits
    assert (head.method, head.status, get.method, get.status) == ("HEAD", 405, "GET", 304)
    assert get.headers["if-none-match"] == '"v1"' and get.headers["if-modified-since"] == LM1
    assert StatusCheck.objects.filter(url=url, agent="active_scan").count() == 2  # every request is a check

    res.etag, res.body = '"v2"', res.body.replace(b"version 1", b"version 2")
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert _moves(url)[-2:] == [("visited", "init", "active_scan"), ("init", "visited", "load")]
    assert [(h.method, h.status) for h in web.hits[-3:]] == [("HEAD", 405), ("GET", 200), ("GET", 200)]
    assert zlib.decompress(Page.objects.get(url=url).body_z).find(b"version 2") >= 0  # the new copy is stored


def test_without_validators_the_body_checksum_decides(sent, web):
    res = Resource(content_length=False)  # HEAD answers with no ETag, Last-Modified or Content-Length
    url = _loaded(web, "/p.html", res)
    web.hits.clear()
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert url.state == "visited"
    assert web.requests("/p.html") == [("HEAD", 200), ("GET", 200)]
    assert "if-none-match" not in web.hits[-1].headers
    assert UrlEvent.objects.filter(url=url).latest("id").reason == "checksum same"

    res.body = res.body.replace(b"version 1", b"version 2")  # same length
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert _moves(url)[-2:] == [("visited", "init", "active_scan"), ("init", "visited", "load")]
    assert UrlEvent.objects.filter(url=url, agent="active_scan").latest("id").reason == "checksum differs"


def test_gone_is_dead_at_once(sent, web):
    res = Resource(etag='"v1"')
    url = _loaded(web, "/p.html", res)
    res.status = 410
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert (url.state, url.next_check_at, url.last_status, url.failure_kind) == ("dead", None, 410, "http_status")
    assert _scan(sent, ACTIVE) == [] and _scan(sent, INACTIVE) == []  # dead stays dead


def test_too_many_requests_backs_off_the_server_and_moves_only_that_url(sent, web):
    a = _loaded(web, "/a.html", res_a := Resource(etag='"a"'))
    b = _loaded(web, "/b.html", Resource(etag='"b"'))
    events = UrlEvent.objects.count()
    res_a.status, res_a.headers = 429, {"Retry-After": "120"}
    web.hits.clear()
    (outcome,) = _scan(sent, ACTIVE)
    assert outcome is not None and outcome.backed_off
    assert [(h.method, h.path) for h in web.hits] == [("HEAD", "/a.html")]  # b not asked during the back-off
    soon = timezone.now() + timedelta(seconds=100)
    assert Server.objects.get(id=a.server_id).next_request_at > soon
    a.refresh_from_db()
    b.refresh_from_db()
    # a takes its step towards Dead (it would stand first in line again after the pause); b waits the pause.
    assert (a.state, a.failure_count, a.last_status, a.lease_owner) == ("noresponse1", 1, 429, "")
    assert a.next_check_at > timezone.now() + timedelta(seconds=3000)
    assert (b.state, b.lease_owner) == ("visited", "") and b.next_check_at > soon
    assert UrlEvent.objects.count() == events + 1
    assert _moves(a)[-1] == ("visited", "noresponse1", "active_scan")
    assert _scan(sent, ACTIVE) == []  # they wait for the back-off to end
    assert StatusCheck.objects.filter(url=a, status_code=429).count() == 1


def test_failing_url_walks_to_dead_on_the_back_off_schedule(sent, web, settings):
    settings.CRAWL_NR1_BACKOFF, settings.CRAWL_NR2_BACKOFF = 3600, 7200
    url = _loaded(web, "/p.html", Resource(etag='"v1"'))
    web.shutdown()
    web.server_close()  # connections are refused from now on
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert (url.state, url.failure_kind, url.failure_count) == ("noresponse1", "refused", 1)
    assert url.next_check_at - timezone.now() > timedelta(seconds=3500)
    assert _scan(sent, INACTIVE) == []  # not due yet

    in_1h = timezone.now() + timedelta(seconds=3601)
    _scan(sent, INACTIVE, now=in_1h)
    url.refresh_from_db()
    assert (url.state, url.failure_count) == ("noresponse2", 2)
    assert url.next_check_at - timezone.now() > timedelta(seconds=7100)
    assert _scan(sent, INACTIVE, now=in_1h) == []

    _scan(sent, INACTIVE, now=timezone.now() + timedelta(seconds=7201))
    url.refresh_from_db()
    assert (url.state, url.next_check_at, url.failure_count) == ("dead", None, 3)
    assert _moves(url)[1:] == [
        ("visited", "noresponse1", "active_scan"),
        ("noresponse1", "noresponse2", "inactive_scan"),
        ("noresponse2", "dead", "inactive_scan"),
    ]
    checks = StatusCheck.objects.filter(url=url).exclude(agent="load")
    assert [(c.agent, c.failure_kind, c.category) for c in checks.order_by("id")] == [
        ("active_scan", "refused", "disconnect"),
        ("inactive_scan", "refused", "disconnect"),
        ("inactive_scan", "refused", "disconnect"),
    ]


def test_inactive_scan_answers_visited_when_unchanged_and_init_when_changed(sent, web, settings):
    settings.CRAWL_NR1_BACKOFF = 0
    same = _loaded(web, "/same.html", res_same := Resource(etag='"s"'))
    edited = _loaded(web, "/edited.html", res_edited := Resource(etag='"e1"'))
    res_same.status = res_edited.status = 500
    _scan(sent, ACTIVE)
    assert set(Url.objects.values_list("state", flat=True)) == {"noresponse1"}
    res_same.status = res_edited.status = 200
    res_edited.etag = '"e2"'
    _scan(sent, INACTIVE)
    same.refresh_from_db()
    edited.refresh_from_db()
    assert (same.state, same.failure_count, same.failure_kind) == ("visited", 0, "")
    assert _moves(same)[-1] == ("noresponse1", "visited", "inactive_scan")
    assert edited.state == "init" and _moves(edited)[-1] == ("noresponse1", "init", "inactive_scan")


def test_never_loaded_url_that_answers_again_is_reloaded(sent, web, settings):
    settings.CRAWL_NR1_BACKOFF = 0
    res = Resource(status=503)  # fails at its first load: no page stored
    url = _loaded(web, "/p.html", res, state="noresponse1")
    res.status = 200
    web.hits.clear()
    _scan(sent, INACTIVE)
    url.refresh_from_db()
    assert url.state == "init" and url.next_check_at <= timezone.now()
    assert UrlEvent.objects.filter(url=url).latest("id").reason == "never loaded"
    assert web.requests("/p.html") == [("HEAD", 200)]  # the load agent does the GET


def test_robots_txt_unanswered_holds_the_server_and_its_rules_are_obeyed_once_it_answers(sent, web, settings):
    settings.CRAWL_ROBOTS_RETRY = 0
    settings.CRAWL_BACKOFF_BASE = 60  # the probe window
    web.pages["/robots.txt"].status = 500  # robots.txt fails: the load agent requests nothing else
    url = _loaded(web, "/private/p.html", Resource(), state="noresponse1")
    assert url.failure_kind == "http_status" and url.next_check_at > timezone.now() + timedelta(seconds=3000)
    health = server_health(server=url.server_id)
    assert (health["state"], health["source"]) == ("down", "robots") and "HTTP 500" in health["reason"]
    web.pages["/robots.txt"] = Resource(b"User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})
    assert _scan(sent, INACTIVE) == []  # held: not even its NoResponse re-checks go, until the probe
    ServerHealth.objects.filter(server_id=url.server_id).update(probe_at=timezone.now())  # the window is over
    Url.objects.filter(id=url.id).update(next_check_at=timezone.now())
    events = UrlEvent.objects.count()
    _scan(sent, INACTIVE)  # the probe: robots.txt, asked again, answers; its rules hold from now on
    url.refresh_from_db()
    assert (url.state, url.exclusion_reason, url.next_check_at, url.lease_owner) == (
        "noresponse1",
        "robots.txt",
        None,
        "",
    )
    assert web.requests("/private/p.html") == [] and UrlEvent.objects.count() == events
    assert server_health(server=url.server_id)["state"] == "healthy"


def test_the_monitors_recovery_brings_the_urls_failed_in_the_outage_due_again(sent, web, settings):
    from crawlcore.services.health import health_hold, health_release

    settings.CRAWL_BACKOFF_BASE = 60
    web.pages["/robots.txt"].status = 503
    url = _loaded(web, "/p.html", Resource(), state="noresponse1")
    health_hold(server_ids=[url.server_id], source="monitor", reason="2 checks in a row: error")
    web.pages["/robots.txt"] = Resource(b"User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"})
    assert _scan(sent, INACTIVE) == []
    health_release(server_ids=[url.server_id], source="monitor")  # confirmed up
    _scan(sent, INACTIVE)
    url.refresh_from_db()
    assert url.state == "init"  # answers again, never loaded: for the load agent, at once


def test_operator_revives_a_dead_url_and_only_dead_ones(sent, web):
    dead = _loaded(web, "/dead.html", res := Resource())
    alive = _loaded(web, "/alive.html", Resource())
    res.status = 410
    _scan(sent, ACTIVE)
    assert urls_revive(url_ids=[dead.id, alive.id]) == 1
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert (dead.state, dead.failure_count, dead.failure_kind) == ("init", 0, "")
    assert dead.next_check_at <= timezone.now()
    assert _moves(dead)[-1] == ("dead", "init", "admin")
    assert alive.state == "visited"
    assert urls_revive(url_ids=[dead.id]) == 0  # already revived


def test_redelivered_scan_message_changes_nothing(sent, web):
    url = _loaded(web, "/p.html", Resource(etag='"v1"'))
    web.hits.clear()
    scan_sweep(agent=ACTIVE)
    (message,) = sent
    args = dict(agent=ACTIVE, server_id=message["server_id"], url_ids=message["url_ids"])
    first = scan_server_batch(owner="w1", **args)
    assert first is not None and first.unchanged == 1
    assert scan_server_batch(owner="w1", **args) is None  # the same worker again
    assert scan_server_batch(owner="w2", **args) is None  # another worker
    assert len(web.hits) == 1 and len(_moves(url)) == 2  # load's move and one re-check


def test_sweep_reserves_its_urls_and_groups_them_by_server(sent, web, settings):
    with ScanWeb("127.0.0.78") as other:
        _loaded(web, "/a.html", Resource())
        _loaded(web, "/b.html", Resource())
        _loaded(other, "/c.html", Resource())
    assert scan_sweep(agent=ACTIVE) == 3
    assert sorted(len(m["url_ids"]) for m in sent) == [1, 2]
    assert {m["crawler_num"] for m in sent} == {None}
    assert scan_sweep(agent=ACTIVE) == 0  # reserved while the messages wait in the queue
    later = timezone.now() + timedelta(seconds=settings.CRAWL_LEASE_SECONDS + 1)
    assert scan_sweep(agent=ACTIVE, now=later) == 3  # a lost message: sent again once the lease expires


def test_active_sweep_waits_for_revisit_after(sent, web, settings):
    _loaded(web, "/p.html", Resource())
    settings.CRAWL_REVISIT_AFTER = 3600
    assert scan_sweep(agent=ACTIVE) == 0
    assert scan_sweep(agent=ACTIVE, now=timezone.now() + timedelta(seconds=3601)) == 1


def test_active_sweep_with_nothing_past_revisit_after_reads_no_table(sent, web, settings, monkeypatch):
    """A first crawl has no Visited URL due: the sweep asks two index questions (and whether any freshness
    objective exists, a table of a few rows), not the room's counts over every Visited URL and the choice over
    the checks (a second and more each at a million URLs)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crawlcore.services import sweep

    _loaded(web, "/p.html", Resource())
    settings.CRAWL_REVISIT_AFTER = 3600
    monkeypatch.setattr(sweep, "active_scan_room", lambda **kw: pytest.fail("room counted with nothing due"))
    with CaptureQueriesContext(connection) as queries:
        assert scan_sweep(agent=ACTIVE) == 0
    assert len(queries) <= 3, [q["sql"] for q in queries]
    url = Url.objects.get()
    Url.objects.filter(id=url.id).update(sitemap_lastmod=url.last_checked_at + timedelta(seconds=1))
    assert sweep.active_due(now=timezone.now())  # its sitemap says it changed: due before revisit_after


def test_sweeps_skip_servers_no_longer_crawled_and_the_crawl_does_not_wait_for_them(sent, web, settings):
    settings.CRAWL_NR1_BACKOFF = 30
    res = Resource(status=500)
    url = _loaded(web, "/p.html", res, state="noresponse1")
    assert crawl_progress(recheck_within=0)["rechecks"] == 0  # due in 30 s
    assert crawl_progress(recheck_within=60)["rechecks"] == 1  # a crawl waits that long for it
    Server.objects.filter(id=url.server_id).update(excluded_reason="alias of elsewhere")
    assert crawl_progress(recheck_within=60)["rechecks"] == 0
    assert scan_sweep(agent=INACTIVE, now=timezone.now() + timedelta(seconds=31)) == 0


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("tasks.scan.active_scan", "active_scan"),
        ("tasks.scan.inactive_scan", "inactive_scan"),
        ("tasks.scan.sweep_active", "housekeeping"),
        ("tasks.scan.sweep_inactive", "housekeeping"),
    ],
)
def test_scan_tasks_are_routed_to_their_queues(task, queue):
    from crawladmin.celery import app

    assert app.amqp.router.route({}, task)["queue"].name == queue


def test_embedded_worker_consumes_the_scan_queues_and_their_pinned_variants(settings):
    from crawladmin.embedded import queues

    settings.CRAWLER_NUM = 2
    assert {"active_scan", "inactive_scan", "load.c2", "active_scan.c2", "inactive_scan.c2"} <= set(queues())


def test_a_body_cut_short_during_a_rescan_is_no_response(sent, web):
    """The server promises more body than it sends: that answer is incomplete, not a changed page."""
    url = _loaded(web, "/cut.html", Resource(etag='"v1"'))
    web.pages["/cut.html"] = Resource(
        body=b"<html>half", etag='"v2"', head_status=405, content_length=False, headers={"Content-Length": "9999"}
    )
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert url.state == "noresponse1"
    assert url.failure_kind in {"reset", "bad_response"}
    assert not Page.objects.filter(url=url, size=len(b"<html>half")).exists()


def test_a_recheck_answered_with_an_error_is_kept_for_the_archive(sent, web, settings):
    settings.CRAWL_NR1_BACKOFF = 0
    url = _loaded(web, "/p.html", Resource(etag='"v1"'))
    web.pages["/p.html"] = Resource(status=503, body=b"<p>down for maintenance</p>")
    _scan(sent, ACTIVE)
    url.refresh_from_db()
    assert url.state == "noresponse1"
    (kept,) = Exchange.objects.filter(url=url)  # HEAD, then what the server answered it with
    assert kept.status == 503 and kept.method in ("HEAD", "GET") and kept.response_head.startswith("HTTP/1")
    assert kept.request_head.startswith(f"{kept.method} /p.html ")
    web.pages["/p.html"] = Resource(status=404, body=b"<p>no more</p>")
    _scan(sent, INACTIVE)
    assert sorted(Exchange.objects.filter(url=url).values_list("status", flat=True)) == [404, 503]
