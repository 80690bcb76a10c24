"""The admin's operator tools: server list with monitoring status, bulk actions that call services and
leave a LogEntry, URL actions, the viewer group's read-only access."""

from __future__ import annotations

import zlib

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, User
from django.utils import timezone

from crawlcore.models import Page, Server, StatusCheck, Url, UrlEvent
from crawlcore.services.urls import NewUrl, urls_insert
from monitoring.models import ServerMonitor
from ranking.models import PageRank
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db


def staff_in(group: str, name: str) -> User:
    user = User.objects.create_user(name, password="pw-not-secret", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def operator(client):
    client.force_login(staff_in("operator", "op"))
    return client


@pytest.fixture
def crawl():
    ids = urls_insert(
        urls=[NewUrl(u, depth=0) for u in ("http://a.example/", "http://a.example/x", "http://b.example/")],
        trusted=True,
    ).ids
    Url.objects.filter(id=ids["http://a.example/x"]).update(state="dead", failure_kind="refused")
    return ids


def act(client, model: str, action: str, ids, **extra):
    return client.post(
        f"/admin/crawladmin/{model}/",
        {"action": action, "_selected_action": [str(i) for i in ids], **extra},
        follow=True,
    )


def test_server_list_shows_status_badge_latency_and_filters(operator, crawl):
    a = Server.objects.get(host="a.example")
    ServerMonitor.objects.create(server=a, status="error")
    StatusCheck.objects.create(
        server=a,
        requested_url="http://a.example/",
        checked_at=timezone.now(),
        status_code=500,
        category="error",
        latency_ms=123.4,
        agent="monitor",
    )
    html = operator.get("/admin/crawladmin/server/").content.decode()
    assert ">error</span>" in html and "123 ms" in html
    filtered = operator.get("/admin/crawladmin/server/?monitor_status=error").content.decode()
    assert "a.example" in filtered and "b.example" not in filtered


def test_disable_and_enable_are_logged(operator, crawl):
    a = Server.objects.get(host="a.example")
    act(operator, "server", "disable", [a.id])
    assert not Server.objects.get(id=a.id).enabled
    assert LogEntry.objects.filter(object_id=str(a.id), change_message="Disabled").exists()
    act(operator, "server", "enable", [a.id])
    assert Server.objects.get(id=a.id).enabled


def test_pin_goes_through_an_intermediate_form(operator, crawl):
    servers = list(Server.objects.values_list("id", flat=True))
    page = act(operator, "server", "pin", servers)
    assert b"Pin servers to a crawler number" in page.content
    act(operator, "server", "pin", servers, apply="1", crawler_num="3")
    assert set(Server.objects.values_list("crawler_num", flat=True)) == {3}
    assert LogEntry.objects.filter(change_message="Pinned to crawler 3").count() == len(servers)


def test_revive_dead_urls_of_a_server(operator, crawl):
    a = Server.objects.get(host="a.example")
    response = act(operator, "server", "revive_dead", [a.id])
    assert b"Revived 1 Dead URL" in response.content
    url = Url.objects.get(id=crawl["http://a.example/x"])
    assert url.state == "init" and url.failure_kind == ""
    assert UrlEvent.objects.filter(url=url, from_state="dead", to_state="init", agent="admin").exists()


def test_check_now_runs_the_monitoring_check(operator, settings):
    settings.CRAWL_HEADER_TIMEOUT = 2.0
    with TestWebServer(SiteSpec(n_servers=1, pages_per_server=2, first_octet=190)) as tw:
        host = tw.web.normal_hosts()[0]
        url = tw.web.url(host, "/")
        from monitoring.server_list import parse_server_row
        from monitoring.services.servers import servers_import

        server_id = servers_import(trusted=True, rows=[parse_server_row([url])]).server_ids[0]
        response = act(operator, "server", "check_now", [server_id])
    assert b"Checked 1 server" in response.content
    assert ServerMonitor.objects.get(server_id=server_id).last_category == "normal"
    assert StatusCheck.objects.filter(server_id=server_id, agent="monitor").count() == 1


def test_url_actions_requeue_revive_and_exclude(operator, crawl):
    home, dead = crawl["http://a.example/"], crawl["http://a.example/x"]
    Url.objects.filter(id=home).update(next_check_at=None)
    act(operator, "url", "requeue", [home, dead])
    assert Url.objects.get(id=home).next_check_at is not None
    act(operator, "url", "revive", [dead])
    assert Url.objects.get(id=dead).state == "init"
    act(operator, "url", "exclude_urls", [home])
    url = Url.objects.get(id=home)
    assert url.exclusion_reason == "excluded by an operator" and url.next_check_at is None
    assert LogEntry.objects.filter(object_id=str(home), change_message="Excluded by an operator").exists()


def test_url_filters_by_server_status_class_and_failure_kind(operator, crawl):
    a = Server.objects.get(host="a.example")
    html = operator.get(f"/admin/crawladmin/url/?server={a.id}&failure_kind=refused").content.decode()
    assert "http://a.example/x" in html and "http://b.example/" not in html
    assert operator.get("/admin/crawladmin/url/?last_status_class=5").status_code == 200


def test_page_list_shows_rank(operator, crawl):
    home = Url.objects.get(id=crawl["http://a.example/"])
    Page.objects.create(url=home, body_z=zlib.compress(b""), title="Home", checksum="c", fetched_at=timezone.now())
    PageRank.objects.create(
        url=home,
        server=home.server,
        page_id=0,
        site_id=0,
        domain_id=0,
        community_id=0,
        domain="a.example",
        community="a.example",
        rank=0.125,
        local_rank=1,
        block_rank=1,
        computed_at=timezone.now(),
    )
    html = operator.get("/admin/crawladmin/page/").content.decode()
    assert "Home" in html and "0.125" in html


def test_a_viewer_sees_no_actions_and_cannot_change(client, crawl):
    client.force_login(staff_in("viewer", "vi"))
    html = client.get("/admin/crawladmin/server/").content.decode()
    assert 'value="disable"' not in html
    a = Server.objects.get(host="a.example")
    act(client, "server", "disable", [a.id])
    assert Server.objects.get(id=a.id).enabled


def test_requeue_without_a_worker_says_what_will_happen_and_how(operator, crawl, settings):
    """The embedded mode serving only (the demo after its crawl): queued work waits for a crawl command."""
    from crawlcore import workers

    settings.CELERY_EMBEDDED = True
    url_id = crawl["http://a.example/x"]
    Url.objects.filter(id=url_id).update(state="noresponse1")
    page = act(operator, "url", "requeue", [url_id]).content.decode()
    assert "Re-queued 1 URL(s)" in page and "manage.py crawl" in page and "Nothing runs it yet" in page
    workers.embedded_worker_set(True)  # a crawl command's worker runs in this process
    try:
        Url.objects.filter(id=url_id).update(state="noresponse1")
        page = act(operator, "url", "requeue", [url_id]).content.decode()
        assert "Re-queued 1 URL(s)" in page and "Nothing runs it yet" not in page
    finally:
        workers.embedded_worker_set(False)


def test_url_list_has_a_next_check_column(operator, crawl):
    page = operator.get("/admin/crawladmin/url/").content.decode()
    assert "Next check" in page and "due now" in page
