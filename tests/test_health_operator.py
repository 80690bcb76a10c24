"""An operator's pause of a server's crawl, through each door: `manage.py server pause|resume|show`, the API
(`POST /api/v1/servers/ID/pause/`, `health` in `GET /api/v1/servers/ID/`), the admin action; and what the
jobs' "why is it not moving" and /metrics then say. Bad input is one clear line (CLI) or a 400 (API)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from crawlcore.models import Server
from crawlcore.selectors_health import server_health
from crawlcore.services import health
from dashboard.tokens import api_token_create

from .crawlcheck import ROOT, clean_env

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    return Server.objects.create(scheme="http", host="paused.example", port=8080)


def _run(*args: str) -> str:
    out = StringIO()
    call_command("server", *args, stdout=out)
    return out.getvalue()


def test_cli_pause_until_then_resume(server):
    line = _run("pause", "http://paused.example:8080", "--until", "2h", "--note", "migration", "--by", "alice")
    assert line.startswith("http://paused.example:8080: paused (operator) - paused by alice until")
    assert "migration" in line
    h = server_health(server=server)
    assert h["state"] == "paused" and h["until"] is not None
    resumed = _run("resume", "http://paused.example:8080/", "--by", "alice")
    assert resumed.strip() == "http://paused.example:8080: healthy"
    shown = json.loads(_run("show", "http://paused.example:8080", "--json"))
    assert [e["state"] for e in shown["history"]] == ["healthy", "paused"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["pause", "http://nowhere.example"], "no server http://nowhere.example"),
        (["pause", "paused.example"], "give the server as http://host"),
        (["pause", "http://paused.example:8080", "--until", "soon"], "not a time"),
        (["pause", "http://paused.example:8080", "--until", "2001-01-01T00:00"], "not in the future"),
        (["resume", "http://paused.example:8080", "--until", "2h"], "go with pause only"),
    ],
)
def test_cli_bad_input_is_one_clear_error(server, args, says):
    with pytest.raises(CommandError, match=says):
        _run(*args)


def test_cli_bad_input_is_one_line_and_a_non_zero_exit(tmp_path):
    proc = subprocess.run(
        [sys.executable, "manage.py", "server", "pause", "http://nowhere.example", "--until", "1h"],
        cwd=ROOT, env=clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path)), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "no server http://nowhere.example" in proc.stderr
    assert "Traceback" not in proc.stderr


def _token(*groups: str) -> str:
    user = User.objects.create_user("op", password="unused-pw-1")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return api_token_create(user=user)[1]


def _call(method: str, path: str, token: str, body: dict | None = None):
    response = getattr(Client(), method)(
        path, data=json.dumps(body) if body is not None else None, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    return response.status_code, response.json()


def test_api_pause_shows_health_and_resume(server):
    token = _token("operator")
    status, body = _call("post", f"/api/v1/servers/{server.id}/pause/", token, {"until": "30m", "note": "backup"})
    assert status == 200, body
    assert body["health"]["state"] == "paused" and body["health"]["source"] == "operator"
    assert "op" in body["health"]["reason"] and body["health"]["until"]
    status, body = _call("get", f"/api/v1/servers/{server.id}/", token)
    assert status == 200 and set(body["health"]) == {"state", "reason", "source", "since", "until"}
    assert body["health"]["state"] == "paused"
    status, body = _call("post", f"/api/v1/servers/{server.id}/resume/", token)
    assert status == 200 and body["health"]["state"] == "healthy"


def test_api_bad_until_is_a_400_and_a_viewer_may_not_pause(server):
    token = _token("operator")
    status, body = _call("post", f"/api/v1/servers/{server.id}/pause/", token, {"until": "tomorrow-ish"})
    assert status == 400 and "until" in json.dumps(body)
    status, _ = _call("post", f"/api/v1/servers/{server.id}/explode/", token)
    assert status == 404
    User.objects.all().delete()
    viewer = _token("viewer")
    status, _ = _call("post", f"/api/v1/servers/{server.id}/pause/", viewer)
    assert status == 403
    assert server_health(server=server)["state"] == "healthy"


def test_admin_action_pauses_with_until(server, admin_client):
    url = "/admin/crawladmin/server/"
    response = admin_client.post(url, {"action": "pause_crawl", "_selected_action": [server.id], "apply": "1",
                                       "until": "1h", "note": "by hand"})  # fmt: skip
    assert response.status_code == 302
    h = server_health(server=server)
    assert h["state"] == "paused" and "by hand" in h["reason"]
    admin_client.post(url, {"action": "resume_crawl", "_selected_action": [server.id]})
    assert server_health(server=server)["state"] == "healthy"


def test_metrics_count_servers_per_health_state(server, admin_client):
    health.health_pause(server_ids=[server.id], by="alice", until=timezone.now() + timedelta(hours=1))
    Server.objects.create(scheme="http", host="other.example", port=80)
    from dashboard.metrics import metrics_text

    text = metrics_text()
    assert 'crawladmin_servers_by_health{state="paused"} 1' in text
    assert 'crawladmin_servers_by_health{state="healthy"} 1' in text


def test_why_a_job_is_not_moving_asks_the_servers_health(server):
    from crawlcore.models import Job, JobUrl, Url
    from crawlcore.selectors_jobs import job_stalled
    from crawlcore.services.urls import NewUrl, urls_insert

    job = Job.objects.create(name="j", seeds=["http://paused.example:8080/"], state=Job.RUNNING)
    ids = urls_insert(urls=[NewUrl("http://paused.example:8080/", depth=0)], trusted=True).ids
    JobUrl.objects.create(job=job, url=Url.objects.get(id=ids["http://paused.example:8080/"]), depth=0)
    health.health_hold(server_ids=[server.id], source="monitor", reason="2 checks in a row: disconnect")
    (stalled,) = job_stalled(job=job)
    assert (stalled["health"], stalled["source"]) == ("down", "monitor")
    assert "the monitor confirmed it down (2 checks in a row: disconnect)" in stalled["reason"]


def test_the_server_page_and_the_grid_tile_show_the_health(server, admin_client):
    from django.urls import reverse

    health.health_pause(server_ids=[server.id], by="alice", note="moving racks")
    page = admin_client.get(reverse("dashboard:server", args=[server.id])).content.decode()
    assert 'id="health"' in page and "paused" in page and "moving racks" in page and "(operator)" in page
    assert "health history" in page
    grid = admin_client.get(reverse("dashboard:grid")).content.decode()
    assert 'title="crawl paused (operator): paused by alice' in grid
