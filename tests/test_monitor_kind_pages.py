"""Every monitor kind first-class: the name people gave it on its tile, its page, its alerts and the report;
a page for each kind (a heartbeat's period, grace, ping URLs and last pings with their bodies and source; a
TCP port's connect and TLS times and banner; a DNS name's answer and the nameserver asked); latency where
the kind has one; no crawl sections on a monitor that is not crawled."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from alerts.logic import EventView, message_compose
from dashboard import cache
from monitoring.models import ServerMonitor
from monitoring.report import uptime_report
from monitoring.services.checks import monitors_check
from monitoring.services.monitors import monitor_add
from testweb.monitor_kinds import dns_server, tcp_listener

pytestmark = pytest.mark.django_db
ALLOW = {"CRAWL_ALLOW_PRIVATE": ("127.0.0.0/8",), "MONITOR_RETRIES": 0}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def login(client, group: str):
    user = User.objects.create_user(group, password="pw-not-secret")
    user.groups.add(Group.objects.get(name=group))
    client.force_login(user)
    return client


@pytest.fixture
def viewer(client):
    return login(client, "viewer")


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_heartbeat_is_shown_by_its_name_with_its_ping_urls_and_last_pings(client):
    hb = monitor_add(kind="heartbeat", target="nightly backup", every_s=86400, grace_s=3600).monitor
    token = hb.ping_token
    assert client.post(f"/ping/{token}", data=b"backup done: 12 GB", content_type="text/plain",
                       REMOTE_ADDR="192.0.2.7").status_code == 200  # fmt: skip
    monitors_check(server_ids=[hb.server_id], claim=False)
    seen_by_viewer = login(type(client)(), "viewer").get(f"/dashboard/servers/{hb.server_id}/").content.decode()
    assert token not in seen_by_viewer and "shown to operators" in seen_by_viewer
    viewer = login(client, "operator")
    grid = viewer.get("/dashboard/").content.decode()
    assert '<span class="origin">nightly backup</span>' in grid and "heartbeat://" not in grid
    page = viewer.get(f"/dashboard/servers/{hb.server_id}/").content.decode()
    assert "<h1>nightly backup " in page and "heartbeat://" not in page
    assert f"/ping/{token}</code>" in page and f"/ping/{token}/start</code>" in page
    assert f"/ping/{token}/fail</code>" in page and page.count('class="copy"') == 3
    words = text_of(page)
    assert "Expects a ping every 86400 s , late after a grace of 3600 s more" in words
    assert "backup done: 12 GB" in page and "192.0.2.7" in page
    # Not crawled, no response time: no crawl sections, no latency chart, no red "no answer".
    for crawl_only in ("URLs by state", "failing URLs", "dead links", "Latency</h2>", "Load by hour", "no answer"):
        assert crawl_only not in page, crawl_only


@override_settings(**ALLOW)
def test_a_tcp_port_page_shows_connect_and_tls_times_and_the_banner_and_its_latency(viewer):
    with tcp_listener(banner=b"SSH-2.0-OpenSSH_9.6\r\n") as listener:
        m = monitor_add(kind="tcp", target=listener.target, name="SSH gate", banner="SSH-2.0").monitor
        monitors_check(server_ids=[m.server_id], claim=False)
    page = viewer.get(f"/dashboard/servers/{m.server_id}/").content.decode()
    assert "<h1>SSH gate " in page and f"TCP monitor of {listener.target}" in page
    assert "connected to 127.0.0.1 in" in page and "banner &#x27;SSH-2.0-OpenSSH_9.6&#x27;" in page
    assert "URLs by state" not in page
    tiles = viewer.get("/dashboard/grid.json").json()["tiles"]
    assert tiles[0]["name"] == "SSH gate" and tiles[0]["latency_ms"] is not None  # not "–"


@override_settings(**ALLOW)
def test_a_dns_page_shows_the_answer_and_the_nameserver_asked(viewer):
    with dns_server({("campus.test", "A"): ["192.0.2.10"]}) as ns:
        m = monitor_add(kind="dns", target="campus.test", nameserver=ns.nameserver).monitor
        monitors_check(server_ids=[m.server_id], claim=False)
    assert ServerMonitor.objects.get(pk=m.pk).status == "normal"
    page = viewer.get(f"/dashboard/servers/{m.server_id}/").content.decode()
    assert "<h1>campus.test " in page and "dns://campus.test:53" not in page  # not the server row's port
    assert f"asking <b>{ns.nameserver}</b>" in page and f"A 192.0.2.10 (asked {ns.nameserver})" in page


def test_the_uptime_report_names_an_unnamed_tcp_monitor_as_people_write_it(db):
    monitor_add(kind="tcp", target="db.uni-test.org:5432")
    monitor_add(kind="heartbeat", target="nightly backup")
    names = {r["server"] for r in uptime_report().rows}
    assert names == {"db.uni-test.org:5432", "nightly backup"}


def test_a_late_heartbeat_is_alerted_as_late_not_as_a_disconnect():
    at = "2026-03-02T10:00:00+00:00"
    late = EventView(1, "down", "nightly backup", "", at, "normal", "disconnect", "no ping for 90000s",
                     monitor_kind="heartbeat")  # fmt: skip
    back = EventView(2, "up", "nightly backup", "", at, "disconnect", "normal", monitor_kind="heartbeat")
    assert late.line() == "nightly backup: late, missed its ping (no ping for 90000s)"
    assert back.line() == "nightly backup: on time again (pinged)"
    body = message_compose([late], key="k").body
    assert "disconnect" not in body and "nightly backup: late" in body
