"""The read-only JSON API (crawladmin/api.py): who may read it, what it says, that it only reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from crawlcore.services.urls import NewUrl, urls_insert
from dashboard import cache
from monitoring.models import MaintenanceWindow, ServerMonitor

pytestmark = pytest.mark.django_db

TOKEN = "test-token-\u00e9-not-secret"  # non-ASCII on purpose: compare_digest must not choke on it


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The summary's figures are kept a moment per process: a previous test's must not show."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api_token(settings):
    settings.CRAWLADMIN_API_TOKEN = TOKEN
    return TOKEN


@pytest.fixture
def crawl():
    """Three URLs on two servers, one check of each of two categories, one server monitored."""
    urls_insert(
        urls=[NewUrl(u, depth=0) for u in ("http://a.example/", "http://a.example/x", "http://b.example:8080/")],
        trusted=True,
    )
    a = Server.objects.get(host="a.example")
    now = timezone.now()
    for category in ("normal", "error"):
        StatusCheck.objects.create(
            server=a, requested_url="http://a.example/", checked_at=now, category=category, latency_ms=5, agent="load"
        )
    ServerMonitor.objects.create(server=a, status="normal", last_check_at=now)
    return a


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.mark.parametrize("path", ["/api/summary", "/api/servers"])
def test_no_credentials_is_401_with_a_challenge(client, api_token, path):
    response = client.get(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer wrong", f"Bearer {TOKEN}x", "Bearer ", f"Basic {TOKEN}", "Bearer \u00fc"])
def test_wrong_token_is_401(client, api_token, header):
    assert client.get("/api/summary", HTTP_AUTHORIZATION=header).status_code == 401


def test_token_auth_is_off_when_no_token_is_set(client, settings):
    settings.CRAWLADMIN_API_TOKEN = ""
    assert client.get("/api/summary", **bearer("")).status_code == 401
    assert client.get("/api/summary", **bearer("anything")).status_code == 401


def test_right_token_gets_the_counts(client, api_token, crawl):
    response = client.get("/api/summary", **bearer(TOKEN))
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    body = response.json()
    assert body["urls"] == 3
    assert body["states"]["init"] == 3 and body["states"]["visited"] == 0
    assert body["checks"]["normal"] == 1 and body["checks"]["error"] == 1 and body["checks"]["delay"] == 0
    assert body["servers"] == 2
    assert body["monitoring"] == {"normal": 1, "unmonitored": 1}  # what the servers show, as the grid counts


def test_servers_list_with_monitoring_status(client, api_token, crawl):
    now = timezone.now()
    MaintenanceWindow.objects.create(server=crawl, starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=1))
    body = client.get("/api/servers", **bearer(TOKEN)).json()
    assert body["count"] == 2
    by_origin = {s["origin"]: s for s in body["servers"]}
    assert set(by_origin) == {"http://a.example", "http://b.example:8080"}
    assert by_origin["http://a.example"]["monitoring"]["status"] == "maintenance"
    assert by_origin["http://b.example:8080"]["monitoring"] is None


def test_servers_paging_and_bad_parameters(client, api_token, crawl):
    everything = [s["id"] for s in client.get("/api/servers", **bearer(TOKEN)).json()["servers"]]
    assert everything == sorted(everything) and len(everything) == 2
    body = client.get("/api/servers?limit=1&offset=1", **bearer(TOKEN)).json()
    assert body["count"] == 2 and [s["id"] for s in body["servers"]] == everything[1:]
    for bad in ("limit=-1", "limit=x", "offset=1.5", "limit=10001"):
        assert client.get(f"/api/servers?{bad}", **bearer(TOKEN)).status_code == 400, bad


def test_a_readers_session_is_enough_and_a_user_in_no_group_is_refused(client, settings, crawl):
    settings.CRAWLADMIN_API_TOKEN = ""
    user = get_user_model().objects.create_user("operator", password="pw-for-tests-only")
    client.force_login(user)
    for path in ("/api/summary", "/api/servers", "/metrics"):
        assert client.get(path).status_code == 403, path
    user.groups.add(Group.objects.get(name="viewer"))
    assert client.get("/api/summary").status_code == 200
    assert client.get("/api/servers").status_code == 200


def test_a_wrong_token_is_refused_even_with_a_session(client, api_token):
    client.force_login(get_user_model().objects.create_user("operator", password="pw-for-tests-only"))
    assert client.get("/api/summary", **bearer("wrong")).status_code == 401


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_read_only(client, api_token, method):
    response = getattr(client, method)("/api/summary", **bearer(TOKEN))
    assert response.status_code == 405
    assert client.head("/api/servers", **bearer(TOKEN)).status_code == 200


def test_healthz_needs_no_auth_and_checks_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}
    assert client.post("/healthz").status_code == 405
