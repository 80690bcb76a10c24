"""The admin looks like the dashboard's product: its colours and icon, its time format, its status badges,
lists of seeds and patterns one a line, internals read-only, inline rows named; the favicon answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crawlcore.models import Job, JobRun, Server
from monitoring.models import ServerMonitor

pytestmark = pytest.mark.django_db


def test_the_admin_carries_the_dashboards_styles_icon_and_a_way_back(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "dashboard/admin.css" in page and "dashboard/favicon.svg" in page
    assert 'href="/dashboard/">Dashboard</a>' in page and "Django administration" not in page


def test_admin_times_and_status_badges_read_as_on_the_dashboard(admin_client):
    server = Server.objects.create(scheme="http", host="a.example", port=80)
    at = datetime(2026, 11, 28, 22, 27, 44, tzinfo=UTC)
    ServerMonitor.objects.create(server=server, status="disconnect", status_since=at, last_check_at=at)
    page = admin_client.get("/admin/monitoring/servermonitor/").content.decode()
    assert '<span class="badge disconnect">disconnect</span>' in page
    assert "2026-11-28 22:27:44 UTC" in page and "Nov. 28, 2026" not in page


def test_job_lists_are_edited_one_a_line_and_runs_are_named(admin_client):
    job = Job.objects.create(name="uni", seeds=["http://a.example/", "http://b.example/"], include=["^/news/"])
    JobRun.objects.create(job=job, started_at=datetime(2026, 11, 28, 22, 0, tzinfo=UTC), trigger="manual")
    page = admin_client.get(f"/admin/crawladmin/job/{job.id}/change/").content.decode()
    assert 'class="one-a-line"' in page and "http://a.example/\nhttp://b.example/</textarea>" in page
    assert "JobRun object" not in page
    assert str(JobRun.objects.get()) == "run started 2026-11-28 22:00:00 UTC (manual)"


def test_internals_of_a_server_are_shown_not_edited(admin_client):
    server = Server.objects.create(scheme="http", host="a.example", port=80, ip="192.0.2.1", load_profile=[1.0] * 24)
    form = admin_client.get(f"/admin/crawladmin/server/{server.id}/change/").content.decode()
    for internal in ("ip", "load_profile", "robots_txt", "next_request_at"):
        assert f'name="{internal}"' not in form, internal
    assert "192.0.2.1" in form


def test_the_favicon_answers(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("dashboard/favicon.svg")
