"""The dashboard tells the truth as it is now: a server not checked for two intervals is stale,
an unconfirmed failure is amber, down is red, and uptime counts a failed check before rollups run."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from dashboard import cache, selectors_crawl, selectors_grid, selectors_server
from monitoring.models import ServerMonitor
from monitoring.services.checks import monitors_check
from monitoring.services.servers import servers_import
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db
FAST = {"CRAWL_CONNECT_TIMEOUT": 1.0, "CRAWL_HEADER_TIMEOUT": 0.5, "CRAWL_BODY_TIMEOUT": 2.0}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def viewer(client):
    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    return client


def monitored(host: str, **monitor) -> Server:
    server = Server.objects.create(scheme="http", host=host, port=80)
    ServerMonitor.objects.create(server=server, **monitor)
    return server


def check(server: Server, category: str, *, ago: timedelta, code: int | None = 200) -> None:
    StatusCheck.objects.create(
        server=server,
        requested_url=f"{server.origin}/",
        checked_at=timezone.now() - ago,
        status_code=code,
        category=category,
        latency_ms=20.0,
        agent="monitor",
    )


def tiles() -> dict[str, selectors_grid.Tile]:
    return {t.origin: t for t in selectors_grid.grid_tiles()[1]}


@override_settings(MONITOR_INTERVAL=300.0)
def test_a_tile_not_checked_for_two_intervals_is_stale_with_its_age_and_interval():
    now = timezone.now()
    old = monitored("old.example", status="normal", last_check_at=now - timedelta(minutes=12))
    monitored("fresh.example", status="normal", last_check_at=now - timedelta(minutes=4))
    monitored("custom.example", status="error", interval_s=30.0, last_check_at=now - timedelta(minutes=2))
    check(old, "normal", ago=timedelta(minutes=12))
    shown = tiles()
    assert shown["http://old.example"].status == "stale"
    assert shown["http://old.example"].note == "stale · last check 12 min ago (every 5 min)"
    assert shown["http://fresh.example"].status == "normal"
    assert shown["http://custom.example"].status == "stale"  # its own interval: 30 s
    assert "(every 30 s)" in shown["http://custom.example"].note
    assert selectors_grid.monitor_status_counts()["stale"] == 2  # the counts say what the tiles show


@override_settings(MONITOR_INTERVAL=10.0)
def test_ages_under_a_minute_are_in_seconds_never_zero_minutes(viewer):
    now = timezone.now()
    recent = monitored("recent.example", status="normal", last_check_at=now - timedelta(seconds=3))
    late = monitored("late.example", status="normal", last_check_at=now - timedelta(seconds=45))
    check(recent, "normal", ago=timedelta(seconds=3))
    check(late, "normal", ago=timedelta(seconds=45))
    shown = tiles()
    assert re.fullmatch(r"\d+ s ago", shown["http://recent.example"].ago), shown["http://recent.example"].ago
    assert re.fullmatch(r"stale · last check \d+ s ago \(every 10 s\)", shown["http://late.example"].note)
    page = viewer.get("/dashboard/").content.decode()
    assert "0\xa0minutes" not in page and "0 minutes" not in page


@override_settings(MONITOR_FAIL_AFTER=2)
def test_an_unconfirmed_failure_is_its_own_amber_state_and_down_says_since_when(viewer):
    now = timezone.now()
    monitored("wobbly.example", status="normal", candidate="disconnect", streak=1, last_check_at=now)
    monitored("down.example", status="disconnect", status_since=now - timedelta(hours=1), last_check_at=now)
    shown = tiles()
    assert shown["http://wobbly.example"].status == "unconfirmed"
    assert shown["http://wobbly.example"].note == "failed 1 of 2 to confirm"
    assert shown["http://down.example"].note.startswith("down since ") and "UTC" in shown["http://down.example"].note
    html = viewer.get("/dashboard/").content.decode()
    assert 'class="tile unconfirmed"' in html and "failed 1 of 2 to confirm" in html
    assert 'data-count="unconfirmed">1<' in html


def test_uptime_counts_a_failed_check_before_any_rollup_runs(viewer):
    server = monitored("flaky.example", status="normal", last_check_at=timezone.now())
    check(server, "normal", ago=timedelta(minutes=2))
    check(server, "disconnect", ago=timedelta(minutes=1), code=None)
    [tile] = selectors_grid.grid_tiles()[1]
    assert tile.uptime_24h == 50.0 and tile.bar == ["normal", "disconnect"]
    assert selectors_server.server_figures(server_id=server.id)["uptime"]["24h"].up == 50.0  # the same selector
    assert "50.00 %" in viewer.get(f"/dashboard/servers/{server.id}/").content.decode()


@override_settings(**FAST, MONITOR_FAIL_AFTER=2)
def test_a_server_that_stops_turns_amber_then_red_after_two_checks():
    """The acceptance scenario, check by check: a monitored test-web server stops answering."""
    spec = SiteSpec(n_servers=1, pages_per_server=2, first_octet=172, silent_server=False, slow_server=False)
    with TestWebServer(spec) as web:
        host = web.web.hosts()[0]
        from monitoring.server_list import parse_server_row

        [sid] = servers_import(trusted=True, rows=[parse_server_row([f"http://{host}:{web.port}/"])]).server_ids
        monitors_check(server_ids=[sid], claim=False)
        assert tiles()[f"http://{host}:{web.port}"].status == "normal"
        web.set_down(host)
        seen = []
        for _ in range(2):
            monitors_check(server_ids=[sid], claim=False)
            seen.append(tiles()[f"http://{host}:{web.port}"].status)
        assert seen == ["unconfirmed", "disconnect"]
        tile = tiles()[f"http://{host}:{web.port}"]
        assert tile.bar == ["normal", "disconnect", "disconnect"] and tile.note.startswith("down since")


def test_server_page_counts_excluded_urls_by_reason_as_the_crawl_page_does():
    from crawlcore.models import Url
    from crawlcore.services.urls import NewUrl, urls_insert

    ids = urls_insert(urls=[NewUrl(u, depth=0) for u in ("http://r.example/", "http://r.example/no")], trusted=True).ids
    Url.objects.filter(id=ids["http://r.example/no"]).update(exclusion_reason="robots.txt")
    server = Server.objects.get(host="r.example")
    states = selectors_server.server_figures(server_id=server.id)["url_states"]
    assert states["init"] == 1 and states["excluded: robots.txt"] == 1
    assert selectors_crawl.url_state_counts()["reasons"] == {"robots.txt": 1}


def test_last_checks_say_no_answer_for_a_timeout_and_no_failure_for_a_success(viewer):
    server = monitored("t.example", status="normal", last_check_at=timezone.now())
    StatusCheck.objects.create(
        server=server,
        requested_url="http://t.example/",
        checked_at=timezone.now(),
        category="disconnect",
        latency_ms=2003.0,
        failure_kind="header_timeout",
        detail="no headers within 2 s",
        agent="monitor",
    )
    StatusCheck.objects.create(
        server=server,
        requested_url="http://t.example/",
        checked_at=timezone.now() - timedelta(minutes=1),
        status_code=200,
        category="normal",
        latency_ms=20.0,
        detail="HTTP 200",
        agent="monitor",
    )
    html = viewer.get(f"/dashboard/servers/{server.id}/").content.decode()
    assert "2003 ms" not in html and "2.00 s" not in html and "no answer" in html
    assert 'class="note">HTTP 200<' not in html and "no headers within 2 s" in html


def test_tile_and_metrics_show_the_certificates_days_left():
    from dashboard.metrics import metrics_text
    from monitoring.models import ServerCertificate

    now = timezone.now()
    server = Server.objects.create(scheme="https", host="tls.example", port=443, group="g")
    ServerMonitor.objects.create(server=server, status="normal", last_check_at=now)
    ServerCertificate.objects.create(server=server, not_after=now + timedelta(days=9, hours=1), checked_at=now)
    [tile] = selectors_grid.grid_tiles()[1]
    assert tile.cert_text == "certificate 9 d left"
    assert 'crawladmin_server_certificate_days_left{server="https://tls.example",group="g",crawler=""} 9.04' in (
        metrics_text()
    )
