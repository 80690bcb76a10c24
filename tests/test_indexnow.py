"""The IndexNow receiver: a push with the site's key makes its URLs due at once (a Visited page sent to the
active scan, a new URL inserted for the load agent); the key file is fetched through the guarded fetcher; the
protocol's statuses; the per-site rate limit."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from crawlcore.models import IndexNowSite, Server, Url, UrlEvent
from crawlcore.services import indexnow as inx
from crawler.urlnorm import canonicalize
from tests.test_scan import ACTIVE, _loaded, _scan, sent, web  # noqa: F401 - the scan tests' fixtures
from testweb.scan import Resource

pytestmark = pytest.mark.django_db

KEY = "a1b2c3d4e5f6a7b8"


def _post(body: dict):
    r = Client().post("/indexnow", data=json.dumps(body), content_type="application/json")
    return r.status_code, r.content.decode()


def _get(url: str, key: str):
    r = Client().get("/indexnow", {"url": url, "key": key})
    return r.status_code, r.content.decode()


def test_a_push_with_the_sites_key_sends_a_changed_page_to_be_fetched_again(sent, web):  # noqa: F811
    res = Resource(etag='"v1"')
    url = _loaded(web, "/p.html", res)
    web.pages[f"/{KEY}.txt"] = Resource(body=KEY.encode() + b"\n")
    res.etag = '"v2"'
    sent.clear()
    host = Server.objects.get(id=url.server_id).host
    code, text = _post({"host": host, "key": KEY, "urlList": [web.url("/p.html"), web.url("/new.html")]})
    assert code == 200, text
    assert [m["url_ids"] for m in sent] == [[url.id]]  # sent to the active scan at once
    assert Url.objects.get(url=canonicalize(web.url("/new.html"))).state == "init"  # a new URL: for the load agent
    from crawlcore.services.scan import scan_server_batch

    scan_server_batch(agent=ACTIVE, server_id=sent[0]["server_id"], url_ids=sent[0]["url_ids"], owner="w")
    url.refresh_from_db()
    # The check found the change, and the load agent's batch reloaded it in the same visit.
    moves = list(UrlEvent.objects.filter(url=url).order_by("id").values_list("from_state", "to_state", "agent"))
    assert moves[-2:] == [("visited", "init", "active_scan"), ("init", "visited", "load")]
    assert url.state == "visited" and web.requests("/p.html")[-2:] == [("HEAD", 200), ("GET", 200)]
    # The key is remembered: a second push does not fetch the key file again.
    web.hits.clear()
    assert _get(web.url("/p.html"), KEY)[0] == 200
    assert web.requests(f"/{KEY}.txt") == []


def test_a_pushed_page_not_sent_at_once_is_due_at_the_next_sweep(sent, web, settings):  # noqa: F811
    settings.CRAWL_REVISIT_AFTER = 3600
    url = _loaded(web, "/p.html", Resource())
    _scan(sent, ACTIVE)
    assert sent == []  # checked just now: not due
    Url.objects.filter(id=url.id).update(pushed_at=timezone.now() + timedelta(seconds=1))
    _scan(sent, ACTIVE, now=timezone.now() + timedelta(seconds=2))
    assert [m["url_ids"] for m in sent] == [[url.id]]


def test_403_when_the_key_file_does_not_hold_the_key(sent, web):  # noqa: F811
    url = _loaded(web, "/p.html", Resource())
    web.pages[f"/{KEY}.txt"] = Resource(body=b"someotherkey123\n")
    code, text = _get(web.url("/p.html"), KEY)
    assert code == 403 and "does not hold this key" in text
    assert Url.objects.get(id=url.id).pushed_at is None


def test_the_key_file_is_fetched_through_the_guard(sent, web, settings):  # noqa: F811
    url = _loaded(web, "/p.html", Resource())
    web.pages[f"/{KEY}.txt"] = Resource(body=KEY.encode())
    Server.objects.filter(id=url.server_id).update(trusted=False)
    settings.CRAWL_ALLOW_PRIVATE = ()
    web.hits.clear()
    assert _get(web.url("/p.html"), KEY)[0] == 403
    assert web.requests(f"/{KEY}.txt") == []  # a private address nobody vouched for: never reached


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"host": "unknown.example", "key": KEY, "urlList": ["http://unknown.example/a"]}, 422),
        ({"host": "other.example", "key": KEY, "urlList": ["http://unknown.example/a"]}, 422),
        ({"host": "unknown.example", "key": "short", "urlList": ["http://unknown.example/a"]}, 400),
        ({"host": "unknown.example", "key": KEY, "urlList": []}, 400),
        ({"host": "unknown.example", "key": KEY, "urlList": ["ftp://unknown.example/a"]}, 400),
        ({"key": KEY}, 400),
    ],
)
def test_bad_pushes_answer_the_protocols_status_in_one_line(body, status):
    code, text = _post(body)
    assert code == status and text.count("\n") == 1


def test_pushes_are_rate_limited_per_site(monkeypatch):
    server = Server.objects.create(scheme="http", host="a.example", port=80)
    monkeypatch.setattr(inx, "_key_holds", lambda *a, **k: True)
    monkeypatch.setattr(inx, "PUSHES_PER_WINDOW", 3)
    codes = [_get("http://a.example/x", KEY)[0] for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    IndexNowSite.objects.filter(server=server).update(window_at=timezone.now() - timedelta(minutes=2))
    assert _get("http://a.example/x", KEY)[0] == 200  # a new window
