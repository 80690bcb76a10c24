"""The public status page of a server group: opt-in, no login, read-only, nothing private,
90 days of uptime bars, incidents from the status timeline, cached."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from dashboard import cache
from dashboard.models import StatusPage
from monitoring.models import HourlyRollup, ServerMonitor, StatusChange

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def group():
    now = timezone.now()
    web = Server.objects.create(scheme="https", host="www.uni.example", port=8443, group="uni")
    mail = Server.objects.create(scheme="http", host="mail.uni.example", port=80, group="uni")
    Server.objects.create(scheme="http", host="secret.other.example", port=80, group="other")
    ServerMonitor.objects.create(server=web, status="normal", last_check_at=now)
    ServerMonitor.objects.create(server=mail, status="disconnect", status_since=now, last_check_at=now)
    StatusCheck.objects.create(
        server=web,
        requested_url="https://www.uni.example:8443/private/health?token=s3cret",
        checked_at=now,
        status_code=200,
        category="normal",
        latency_ms=20,
        agent="monitor",
    )
    hour = now.replace(minute=0, second=0, microsecond=0)
    HourlyRollup.objects.create(server=web, hour=hour - timedelta(days=3), normal=11, error=1)
    HourlyRollup.objects.create(server=web, hour=hour - timedelta(days=100), normal=1, error=1)  # beyond 90 days
    StatusChange.objects.create(
        server=web,
        from_status="normal",
        to_status="error",
        at=now - timedelta(days=3),
        reason="HTTP 500 from /private/health?token=s3cret",
    )
    StatusChange.objects.create(
        server=web, from_status="error", to_status="normal", at=now - timedelta(days=3) + timedelta(minutes=20)
    )
    StatusChange.objects.create(server=mail, from_status="normal", to_status="disconnect", at=now, reason="x")
    return web, mail


def test_no_status_page_until_an_operator_adds_one(group):
    assert Client().get("/status/uni/").status_code == 404


def test_status_page_shows_state_uptime_bars_and_incidents_without_login_or_private_data(group):
    StatusPage.objects.create(slug="uni", group="uni", title="University web")
    response = Client().get("/status/uni/")
    assert response.status_code == 200 and "public" in response["Cache-Control"]
    html = response.content.decode()
    assert "University web" in html and "Some systems are down" in html
    assert "www.uni.example" in html and "mail.uni.example" in html and "Down: not answering" in html
    assert html.count('<i class="') == 2 * 90  # a bar a day for each server
    assert "91.67 %" in html  # the day with 11 of 12 answered (the 100-day-old hour is left out)
    assert "answering with errors" in html and "ongoing" in html  # the web server's incident, then mail's
    for private in ("secret.other.example", "s3cret", "/private", "8443", "https://", "Log out", 'href="/dashboard/'):
        assert private not in html, private


def test_status_page_is_rendered_once_a_minute_whatever_the_traffic(group, django_assert_max_num_queries):
    StatusPage.objects.create(slug="uni", group="uni")
    client = Client()
    client.get("/status/uni/")
    with django_assert_max_num_queries(0):
        for _ in range(20):
            assert client.get("/status/uni/").status_code == 200
        assert client.get("/status/nope/").status_code == 404


def test_status_page_may_show_addresses_when_chosen(group):
    StatusPage.objects.create(slug="uni", group="uni", show_addresses=True)
    html = Client().get("/status/uni/").content.decode()
    assert 'href="https://www.uni.example:8443/"' in html
