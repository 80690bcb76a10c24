"""One rule for what a server shows (monitoring.selectors.servers_shown): the grid, /api/servers and
/metrics agree for a server in each shown state, stale and unconfirmed included."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from crawlcore.models import Server
from dashboard import cache
from monitoring.models import MaintenanceWindow, ServerMonitor
from monitoring.selectors import server_shown_status

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-not-secret-at-all"))
    return client


def _server(host: str, **monitor) -> Server:
    server = Server.objects.create(scheme="http", host=host, port=80)
    if monitor:
        ServerMonitor.objects.create(server=server, **monitor)
    return server


@override_settings(MONITOR_INTERVAL=60.0, MONITOR_FAIL_AFTER=2)
def test_grid_api_and_metrics_show_the_same_status_in_every_shown_state(admin_client):
    now = timezone.now()
    expected = {
        "normal.example": ("normal", _server("normal.example", status="normal", last_check_at=now)),
        "stale.example": (
            "stale",
            _server("stale.example", status="normal", last_check_at=now - timedelta(minutes=10)),
        ),
        "unconfirmed.example": (
            "unconfirmed",
            _server("unconfirmed.example", status="normal", candidate="disconnect", streak=1, last_check_at=now),
        ),
        "down.example": ("error", _server("down.example", status="error", last_check_at=now)),
        "quiet.example": ("maintenance", _server("quiet.example", status="error", last_check_at=now)),
        "plain.example": ("unmonitored", _server("plain.example")),
    }
    MaintenanceWindow.objects.create(
        server=expected["quiet.example"][1], starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=1)
    )

    grid = {t["id"]: t["status"] for t in admin_client.get("/dashboard/grid.json").json()["tiles"]}
    api = {
        s["host"]: (s["monitoring"] or {}).get("status", "unmonitored")
        for s in admin_client.get("/api/servers").json()["servers"]
    }
    metrics = admin_client.get("/metrics").content.decode()
    by_status = {
        m.group(1): int(float(m.group(2)))
        for m in re.finditer(r'^crawladmin_servers_by_status\{status="(\w+)"\} (\S+)$', metrics, re.M)
    }

    for host, (status, server) in expected.items():
        assert grid[server.id] == status, host
        assert api[host] == status, host
        assert server_shown_status(server_id=server.id) == status, host
    for status in ("normal", "stale", "unconfirmed", "error", "maintenance", "unmonitored"):
        assert by_status[status] == 1, (status, by_status)
    summary = admin_client.get("/api/summary").json()["monitoring"]
    assert summary == {s: 1 for s in ("normal", "stale", "unconfirmed", "error", "maintenance", "unmonitored")}
