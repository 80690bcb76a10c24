"""The REST API over every object: monitors of each kind with their real kind and the status every page
shows; incidents opened, told and resolved through the API and shown on the public status page; mutes,
maintenance and status pages written by the file's rules; the index; paging; the old JSON API on the same
per-user tokens."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from crawladmin.configfile.apply import config_apply
from crawlcore.models import Server
from dashboard import cache
from dashboard.tokens import api_token_create
from monitoring.models import Incident, MaintenanceWindow, ServerMonitor

pytestmark = pytest.mark.django_db

STATE = """\
servers:
  - url: http://a.example
    group: physics
monitors:
  - server: http://a.example
  - server: tcp://db.example:5432
    tcp_banner: SSH
  - server: dns://example.org
    dns_record_type: MX
  - server: heartbeat://nightly
    period_s: 3600
status_pages:
  - slug: physics
    group: physics
"""


def _token(name: str, *groups: str) -> str:
    user = User.objects.create_user(name, password="unused-pw-1")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return api_token_create(user=user)[1]


def _call(method: str, path: str, token: str | None = None, body: dict | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = getattr(Client(), method)(path, data=json.dumps(body) if body is not None else None,
                                         content_type="application/json", **headers)  # fmt: skip
    return response.status_code, (response.json() if response.get("Content-Type") == "application/json" else None)


def test_monitors_are_listed_with_their_real_kind_and_the_status_every_page_shows():
    config_apply(STATE)
    now = timezone.now()
    tcp = ServerMonitor.objects.get(kind="tcp")
    ServerMonitor.objects.filter(pk=tcp.pk).update(status="normal", last_check_at=now)
    MaintenanceWindow.objects.create(server_id=tcp.pk, starts_at=now - timedelta(minutes=5),
                                     ends_at=now + timedelta(hours=1))  # fmt: skip
    code, body = _call("get", "/api/v1/monitors/", _token("v", "viewer"))
    assert code == 200, body
    by_server = {m["server"]: m for m in body["monitors"]}
    assert {s: m["kind"] for s, m in by_server.items()} == {
        "http://a.example": "http", "tcp://db.example:5432": "tcp", "dns://example.org:53": "dns",
        "heartbeat://nightly:0": "heartbeat",
    }  # fmt: skip
    db = by_server["tcp://db.example:5432"]
    assert (db["status"], db["confirmed_status"], db["tcp_banner"]) == ("maintenance", "normal", "SSH")
    assert by_server["dns://example.org:53"]["dns_record_type"] == "MX"
    assert by_server["heartbeat://nightly:0"]["ping_url"] is None  # a viewer is not given the ping's secret
    operator = _token("o", "operator")
    heartbeat = _call("get", f"/api/v1/monitors/{ServerMonitor.objects.get(kind='heartbeat').pk}/", operator)[1]
    assert heartbeat["ping_url"].endswith(ServerMonitor.objects.get(kind="heartbeat").ping_token)


def test_an_incident_update_posted_through_the_api_shows_on_the_public_status_page():
    config_apply(STATE)
    operator, viewer = _token("o", "operator"), _token("v", "viewer")
    root = User.objects.create_superuser("root", password="unused-pw-1")
    opened = {"server": "http://a.example", "title": "Web down", "text": "Looking into it"}
    assert _call("post", "/api/v1/incidents/", operator, opened)[0] == 403  # the monitor opens them, or a superuser
    code, body = _call("post", "/api/v1/incidents/", api_token_create(user=root)[1], opened)
    assert code == 201, body
    pk = body["id"]
    assert body["status"] == "investigating" and body["updates"][0]["author"] == "root"
    assert _call("post", f"/api/v1/incidents/{pk}/updates/", viewer, {"status": "resolved", "text": "x"})[0] == 403
    code, body = _call("post", f"/api/v1/incidents/{pk}/updates/", operator,
                       {"status": "identified", "text": "A full disk on the web server"})  # fmt: skip
    assert code == 201 and body["status"] == "identified", body
    cache.clear()
    page = Client().get("/status/physics/").content.decode()
    assert "A full disk on the web server" in page and "Web down" in page
    code, body = _call("post", f"/api/v1/incidents/{pk}/updates/", operator, {"status": "resolved", "text": "Fixed"})
    assert code == 201 and body["resolved_at"] is not None
    assert Incident.objects.get(pk=pk).resolved_at is not None
    code, body = _call("post", f"/api/v1/incidents/{pk}/updates/", operator, {"status": "nope", "text": "x"})
    assert code == 400 and "status" in body["fields"]


def test_mutes_maintenance_and_status_pages_are_written_by_the_files_rules():
    config_apply(STATE)
    operator = _token("o", "operator")
    until = (timezone.now() + timedelta(hours=2)).isoformat()
    code, body = _call("post", "/api/v1/mutes/", operator, {"group": "physics", "until": until, "reason": "move"})
    assert code == 201 and body["group"] == "physics", body
    code, body = _call("post", "/api/v1/maintenance/", operator, {"server": "http://a.example", "schedule": "sun 02:00",
                                                                  "duration_minutes": 30})  # fmt: skip
    assert code == 201 and body["time_zone"] == "UTC", body
    code, body = _call("post", "/api/v1/maintenance/", operator, {"group": "physics", "schedule": "every day",
                                                                  "duration_minutes": 30})  # fmt: skip
    assert code == 400 and "schedule" in body["fields"], body
    assert _call("patch", "/api/v1/status-pages/physics/", operator, {"title": "x"})[0] == 403  # a superuser's
    root = api_token_create(user=User.objects.create_superuser("root", password="unused-pw-1"))[1]
    code, body = _call("patch", "/api/v1/status-pages/physics/", root, {"title": "Physics servers"})
    assert code == 200 and body["title"] == "Physics servers" and body["group"] == "physics"
    code, body = _call("get", "/api/v1/status-pages/?limit=1001", operator)
    assert code == 400 and body["error"] == "bad request"


def test_the_index_lists_every_resource_and_each_answers():
    token = api_token_create(user=User.objects.create_superuser("root", password="unused-pw-1"))[1]
    code, body = _call("get", "/api/v1/", token)
    assert code == 200 and body["docs"] == "/api/v1/docs"
    assert {"servers", "monitors", "channels", "maintenance", "mutes", "status_pages", "incidents", "jobs",
            "dead_links", "uptime"} <= set(body["resources"])  # fmt: skip
    for name, path in body["resources"].items():
        if name == "search":
            continue
        code, answer = _call("get", path, token)
        assert code == 200, (path, answer)
    assert _call("get", "/api/v1/uptime/?month=2026-13", token)[0] == 400
    assert _call("get", "/api/v1/nothing/here", token) == (404, {"error": "not found", "fields": {},
                                                                 "detail": "no resource at /api/v1/nothing/here "
                                                                 "(the index: /api/v1/)"})  # fmt: skip


def test_the_docs_page_is_served_without_the_internet():
    token = _token("v", "viewer")
    response = Client().get("/api/v1/docs", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html and "cdn." not in html and "unpkg" not in html
    schema = Client().get("/api/v1/schema", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    schemas = schema["components"]["schemas"]
    monitor = schemas["Monitor"]["properties"]
    kinds = schemas[monitor["kind"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert kinds == ["http", "tcp", "dns", "heartbeat"] and monitor["tcp_tls"]["type"] == "boolean"


def test_the_old_json_api_and_metrics_take_a_users_token():
    Server.objects.create(scheme="http", host="a.example", port=80, group="physics")
    viewer, limited = _token("v", "viewer"), _token("l", "viewer", "servers:chemistry")
    code, body = _call("get", "/api/servers", viewer)
    assert code == 200 and body["count"] == 1
    assert _call("get", "/api/servers", limited)[1]["count"] == 0
    assert _call("get", "/api/summary", viewer)[0] == 200
    assert _call("get", "/api/summary", limited)[0] == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {viewer}").status_code == 200
    assert _call("get", "/api/servers", "ca_wrong")[0] == 401


def test_a_page_of_incidents_costs_the_same_queries_however_many_it_holds():
    """Each incident's evidence and updates were read with one query each: a page of 100 cost 200 more."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from monitoring.models import IncidentUpdate

    token = _token("reader", "viewer")

    def listed(n: int) -> int:
        for k in range(Incident.objects.count(), n):  # a server has one open incident: one server each
            server = Server.objects.create(scheme="http", host=f"inc{k}.example", port=80)
            incident = Incident.objects.create(server=server, title=f"outage {k}")
            IncidentUpdate.objects.create(incident=incident, status=Incident.INVESTIGATING, text="looking")
        with CaptureQueriesContext(connection) as queries:
            code, body = _call("get", "/api/v1/incidents/?limit=100", token)
        assert code == 200 and len(body["incidents"]) == n
        assert all(i["updates"] and i["evidence"] is None for i in body["incidents"])
        return len(queries)

    listed(2)  # the first request reads what later ones find cached (the token's user and groups)
    assert listed(2) == listed(12)
