"""The crawl jobs' pages on the dashboard: who sees which job (another group's is a 404), what the list and a
job's page show (the same figures as the API), and the operators' controls: rights, CSRF, confirmation for
stop, pattern edits counted, bad input a 400 with one line, each action in the admin's history."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from crawlcore.models import Job, Url
from crawlcore.selectors_jobs import job_detail
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_start
from crawler.jobrules import job_spec_check
from dashboard import cache

pytestmark = pytest.mark.django_db
XSS = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    cache.clear()
    monkeypatch.setattr("crawlcore.services.job_life.servers_dispatch_with_due_work", lambda **kw: 0)


def _user(name: str, *groups: str) -> User:
    user = User.objects.create_user(name, password="pw-not-secret")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return user


def _client(*groups: str, name: str = "u", csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(_user(name, *groups))
    return client


@pytest.fixture
def physics():
    seeds = ["http://a.example/", "http://a.example/cal/1", "http://a.example/x"]
    spec, problems = job_spec_check({"name": "docs", "group": "physics", "max_pages": 50, "seeds": seeds})
    assert not problems
    job_save(spec=spec)
    spec, _ = job_spec_check({"name": "chem", "group": "chemistry", "seeds": ["http://c.example/"]})
    job_save(spec=spec)
    job_start(name="docs")
    Url.objects.filter(url="http://a.example/x").update(url=f"http://a.example/x?{XSS}")
    return Job.objects.get(name="docs")


def test_a_viewer_of_the_group_sees_the_job_without_controls_and_another_groups_viewer_gets_404(physics):
    own = _client("viewer", "servers:physics")
    page = own.get("/dashboard/jobs/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Job docs" in html and "job-pause" not in html and "Save patterns" not in html
    listed = own.get("/dashboard/jobs/").content.decode()
    assert "/dashboard/jobs/docs/" in listed and "/dashboard/jobs/chem/" not in listed
    other = _client("viewer", "servers:chemistry", name="v2")
    assert other.get("/dashboard/jobs/docs/").status_code == 404
    assert other.get("/dashboard/jobs/docs/job.json").status_code == 404
    assert "/dashboard/jobs/docs/" not in other.get("/dashboard/jobs/").content.decode()
    assert other.post("/dashboard/jobs/docs/action/", {"action": "pause"}).status_code == 404
    # A viewer of the group may not act on it either.
    assert own.post("/dashboard/jobs/docs/action/", {"action": "pause"}).status_code == 403
    assert Job.objects.get(name="docs").state == Job.RUNNING


def test_the_list_and_the_page_show_the_apis_figures_and_escape_scraped_text(physics):
    client = _client("viewer")
    data = json.loads(client.get("/dashboard/jobs.json").content)
    row = next(j for j in data["jobs"] if j["name"] == "docs")
    api = job_detail(job=physics)
    assert row["progress"] == api["progress"] and row["state"] == "running"
    assert row["progress"]["known"] == 3 and row["progress"]["max_pages"] == 50
    page = json.loads(client.get("/dashboard/jobs/docs/job.json").content)
    assert page["job"]["progress"] == api["progress"] and page["job"]["servers"] == api["servers"]
    Url.objects.filter(url__startswith="http://a.example/x").update(state="dead", last_status=500,
                                                               last_checked_at=timezone.now())
    html = client.get("/dashboard/jobs/docs/").content.decode()
    assert XSS not in html and "&lt;script&gt;" in html
    assert "Exclude: nothing" in html and "Page budget: 50" in html
    assert client.get("/dashboard/jobs/?sort=eta").status_code == 200
    assert client.get("/dashboard/jobs/?sort=nonsense").status_code == 400


def test_an_operator_pauses_edits_patterns_and_stops_with_confirmation_each_in_the_admins_history(physics):
    op = _client("operator", "servers:physics", name="olga", csrf=True)
    # Without the CSRF token: refused.
    assert op.post("/dashboard/jobs/docs/action/", {"action": "pause"}).status_code == 403
    page = op.get("/dashboard/jobs/docs/")
    assert "job-pause" in page.content.decode()
    token = page.cookies["csrftoken"].value

    def act(**data):
        return op.post("/dashboard/jobs/docs/action/", {**data, "csrfmiddlewaretoken": token})

    assert act(action="pause").status_code == 302
    assert Job.objects.get(name="docs").state == Job.PAUSED
    assert act(action="resume").status_code == 302
    reply = act(action="patterns", include="", exclude="^/cal/")
    assert reply.status_code == 302
    shown = op.get(reply["Location"]).content.decode()
    assert "1 queued URL set aside" in shown
    assert Url.objects.get(url="http://a.example/cal/1").exclusion_reason == "job pattern"
    assert json.loads(op.get("/dashboard/jobs/docs/job.json").content)["job"]["progress"]["set_aside"] == 1
    bad = act(action="patterns", exclude="(")
    assert bad.status_code == 400 and "exclude" in bad.content.decode()
    refused = act(action="stop")
    assert refused.status_code == 400 and "confirm" in refused.content.decode()
    assert Job.objects.get(name="docs").state == Job.RUNNING
    assert act(action="stop", confirm="yes").status_code == 302
    assert Job.objects.get(name="docs").state == Job.STOPPED
    history = list(LogEntry.objects.filter(object_id=str(physics.id)).order_by("action_time"))
    assert [e.user.username for e in history] == ["olga"] * 4
    assert [e.change_message.split(" ")[0] for e in history] == ["pause", "resume", "patterns", "stop"]


def test_the_crawl_page_and_the_server_page_link_their_jobs(physics):
    server = Url.objects.get(url="http://a.example/").server
    own = _client("viewer", "servers:physics")
    server.group = "physics"
    server.save()
    assert '/dashboard/jobs/docs/">docs</a> (running)' in own.get(f"/dashboard/servers/{server.id}/").content.decode()
    crawl = _client("viewer", name="all").get("/dashboard/crawl/").content.decode()
    assert '/dashboard/jobs/docs/">docs</a> (running)' in crawl and '/dashboard/jobs/chem/">chem</a>' in crawl


def test_an_operator_pauses_one_server_of_the_job_through_the_host_health_state(physics):
    from crawlcore.selectors_health import server_health

    server = Url.objects.get(url="http://a.example/").server
    server.group = "physics"
    server.save()
    op = _client("operator", "servers:physics", name="olga")
    assert op.post("/dashboard/jobs/docs/action/", {"action": "server_pause", "server": server.id,
                                                    "minutes": "abc"}).status_code == 400  # fmt: skip
    reply = op.post("/dashboard/jobs/docs/action/", {"action": "server_pause", "server": server.id, "minutes": "30"})
    assert reply.status_code == 302
    health = server_health(server=server)
    assert health["state"] == "paused" and health["until"] is not None
    row = next(s for s in json.loads(op.get("/dashboard/jobs/docs/job.json").content)["job"]["servers"]
               if s["server_id"] == server.id)  # fmt: skip
    assert row["state"] == "paused" and row["until"] == health["until"]
    assert LogEntry.objects.filter(object_id=str(physics.id), change_message__startswith="paused server").exists()
