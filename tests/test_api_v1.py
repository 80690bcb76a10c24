"""The REST API /api/v1/ in-process: tokens, roles, group scoping, job actions, errors as JSON."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from crawlcore.models import Job, JobUrl, Server, Url
from crawlcore.services.job_definitions import job_save
from crawler.jobrules import job_spec_check
from dashboard.models import ApiToken
from dashboard.tokens import api_token_create

pytestmark = pytest.mark.django_db


def _user(name: str, *groups: str, superuser: bool = False) -> tuple[User, str]:
    user = User.objects.create_user(name, password="unused-pw-1", is_superuser=superuser)
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return user, api_token_create(user=user)[1]


def _job(name: str, **keys) -> Job:
    spec, problems = job_spec_check({"name": name, "seeds": ["http://127.0.0.1:9/"], **keys})
    assert not problems
    return job_save(spec=spec)[1]


def _call(method: str, path: str, token: str | None = None, body: dict | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    client = Client()
    response = getattr(client, method)(path, data=json.dumps(body) if body is not None else None,
                                       content_type="application/json", **headers)  # fmt: skip
    return response.status_code, (response.json() if response.content else None)


def test_a_viewer_reads_a_job_with_its_progress_and_stalls():
    _job("docs", max_depth=2)
    _, token = _user("v", "viewer")
    code, body = _call("get", "/api/v1/jobs/docs/", token)
    assert code == 200, body
    assert set(body["progress"]) >= {"done", "queued", "failed", "eta_seconds"}
    assert body["stalled"] == [] and body["max_depth"] == 2


def test_without_a_token_401_with_a_bad_one_401():
    _job("docs")
    assert _call("get", "/api/v1/jobs/docs/")[0] == 401
    code, body = _call("get", "/api/v1/jobs/docs/", "ca_wrong")
    assert code == 401 and body["error"] == "unauthorized"


def test_tokens_are_stored_hashed():
    _, token = _user("v", "viewer")
    row = ApiToken.objects.get()
    assert token not in (row.key_hash, row.shown) and len(row.key_hash) == 64


def test_a_viewer_cannot_write_an_operator_can():
    _, viewer = _user("v", "viewer")
    _, operator = _user("o", "operator")
    job = {"name": "news", "seeds": ["http://127.0.0.1:9/"], "max_pages": 20}
    assert _call("post", "/api/v1/jobs/", viewer, job)[0] == 403
    code, body = _call("post", "/api/v1/jobs/", operator, job)
    assert code == 201, body
    assert Job.objects.get(name="news").max_pages == 20
    code, body = _call("patch", "/api/v1/jobs/news/", operator, {"exclude": ["^/calendar/"]})
    assert code == 200 and body["exclude"] == ["^/calendar/"] and body["max_pages"] == 20


def test_bad_input_is_a_400_with_field_errors():
    _, operator = _user("o", "operator")
    code, body = _call("post", "/api/v1/jobs/", operator, {"name": "x", "seeds": ["ftp://a"], "scope": "galaxy",
                                                           "exclude": ["(("]})  # fmt: skip
    assert code == 400
    assert set(body["fields"]) == {"seeds", "scope", "exclude"} and body["error"] == "bad request"
    code, body = _call("post", "/api/v1/jobs/", operator, None)
    assert code == 400


def test_job_actions_pause_and_resume_through_the_api():
    job = _job("docs")
    _, operator = _user("o", "operator")
    code, body = _call("post", "/api/v1/jobs/docs/start/", operator)
    assert code == 200 and body["state"] == "running"
    seed = Url.objects.get(id__in=JobUrl.objects.filter(job=job).values("url_id"))
    assert seed.exclusion_reason == "" and seed.next_check_at is not None
    code, body = _call("post", "/api/v1/jobs/docs/pause/", operator)
    assert code == 200 and body["state"] == "paused"
    seed.refresh_from_db()
    assert seed.exclusion_reason == "job paused" and seed.next_check_at is None  # a paused job takes no slot
    assert [{k: s[k] for k in ("server", "reason", "until")} for s in body["stalled"]] == [
        {"server": "http://127.0.0.1:9", "reason": "paused", "until": None}
    ]
    assert _call("post", "/api/v1/jobs/docs/pause/", operator)[0] == 400
    code, body = _call("post", "/api/v1/jobs/docs/resume/", operator)
    assert code == 200 and body["state"] == "running"
    seed.refresh_from_db()
    assert seed.exclusion_reason == "" and seed.next_check_at is not None
    assert _call("post", "/api/v1/jobs/docs/stop/", operator)[1]["runs"][0]["stop_reason"] == "stopped"


def test_a_reader_limited_to_groups_sees_only_their_jobs_and_servers():
    _job("physics", group="physics")
    _job("chemistry", group="chemistry")
    Server.objects.create(scheme="http", host="a.example", port=80, group="physics")
    Server.objects.create(scheme="http", host="b.example", port=80, group="chemistry")
    _, token = _user("p", "viewer", "servers:physics")
    code, body = _call("get", "/api/v1/jobs/", token)
    assert [j["name"] for j in body["jobs"]] == ["physics"]
    assert _call("get", "/api/v1/jobs/chemistry/", token)[0] == 404
    assert [s["url"] for s in _call("get", "/api/v1/servers/", token)[1]["servers"]] == ["http://a.example"]
    assert _call("get", "/api/v1/channels/", token)[0] == 403


def test_only_a_superuser_sets_a_servers_address_trust_or_owner_email():
    _, operator = _user("o", "operator")
    _, root = _user("r", superuser=True)
    assert _call("post", "/api/v1/servers/", operator, {"url": "http://c.example", "group": "g"})[0] == 403
    code, body = _call("post", "/api/v1/servers/", root, {"url": "http://c.example", "group": "g"})
    assert code == 201, body
    pk = body["id"]
    assert _call("patch", f"/api/v1/servers/{pk}/", operator, {"trusted": True})[0] == 403
    assert _call("patch", f"/api/v1/servers/{pk}/", operator, {"owner_email": "x@example.org"})[0] == 403
    code, body = _call("patch", f"/api/v1/servers/{pk}/", operator, {"group": "h", "max_concurrency": 1})
    assert code == 200 and body["group"] == "h" and body["max_concurrency"] == 1


def test_a_server_removed_takes_its_urls_and_their_pages_with_it():
    # The URL's server has no database-level foreign key (migration 0025): the ORM's cascade does the work.
    from django.utils import timezone

    from crawlcore.models import Link, Page

    _, operator = _user("o", "operator")
    _, root = _user("r", superuser=True)
    gone = Server.objects.create(scheme="http", host="gone.example", port=80)
    kept = Server.objects.create(scheme="http", host="kept.example", port=80)
    a = Url.objects.create(url="http://gone.example/", url_hash="g1", server=gone)
    b = Url.objects.create(url="http://kept.example/", url_hash="k1", server=kept)
    Page.objects.create(url=a, checksum="x", fetched_at=timezone.now())
    Link.objects.create(from_url=b, to_url=a)
    assert _call("delete", f"/api/v1/servers/{gone.id}/", operator)[0] == 403
    assert _call("delete", f"/api/v1/servers/{gone.id}/", root)[0] == 204
    assert list(Url.objects.values_list("url", flat=True)) == ["http://kept.example/"]
    assert not Page.objects.exists() and not Link.objects.exists()


def test_monitors_and_channels_round_trip():
    _, root = _user("r", superuser=True)
    server = Server.objects.create(scheme="http", host="d.example", port=80)
    code, body = _call("post", "/api/v1/monitors/", root, {"server": "http://d.example", "interval_s": 120})
    assert code == 201, body
    assert _call("patch", f"/api/v1/monitors/{server.id}/", root, {"accepted_codes": "nope"})[0] == 400
    code, body = _call("post", "/api/v1/channels/", root, {"name": "ops", "url": "json://127.0.0.1:9/hook"})
    assert code == 201, body
    assert _call("get", "/api/v1/channels/ops/", root)[0] == 200
    assert _call("delete", "/api/v1/channels/ops/", root)[0] == 204


def test_unknown_paths_and_objects_are_json_404():
    _, token = _user("v", "viewer")
    code, body = _call("get", "/api/v1/jobs/none/", token)
    assert code == 404 and body["error"] == "not found"
    assert _call("get", "/api/v1/servers/999/", token)[0] == 404


def test_the_openapi_schema_lists_the_jobs():
    _, token = _user("v", "viewer")
    code, body = _call("get", "/api/v1/schema", token)
    assert code == 200 and "/api/v1/jobs/{name}/" in body["paths"]


def test_search_answers_like_the_command_within_the_readers_groups(monkeypatch):
    import zlib

    from django.utils import timezone

    from crawlcore.models import Page
    from crawlcore.services.extract import pages_extract
    from crawler.urlnorm import url_hash

    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    pages = []
    for host, group in (("a.test", "uni"), ("b.test", "gov")):
        server = Server.objects.create(scheme="http", host=host, port=80, group=group)
        url = Url.objects.create(url=f"http://{host}/", url_hash=url_hash(f"http://{host}/"), server=server,
                                 state="visited")  # fmt: skip
        body = b"<html><head><title>T</title></head><body><p>zephyrine notes</p></body></html>"
        pages.append(Page.objects.create(url=url, body_z=zlib.compress(body), content_type="text/html",
                                         checksum=host, fetched_at=timezone.now()))  # fmt: skip
    pages_extract(page_ids=[p.id for p in pages])
    _, token = _user("v", "viewer")
    code, body = _call("get", "/api/v1/search/?q=zephyrine", token)
    assert code == 200, body
    assert sorted(h["url"] for h in body["results"]) == ["http://a.test/", "http://b.test/"]
    assert {"url", "title", "score", "snippet"} <= set(body["results"][0])
    _, limited = _user("l", "viewer", "servers:gov")
    assert [h["url"] for h in _call("get", "/api/v1/search/?q=zephyrine", limited)[1]["results"]] == ["http://b.test/"]
    assert _call("get", "/api/v1/search/?q=zephyrine&group=uni", limited)[0] == 403
    code, body = _call("get", "/api/v1/search/?q=!!", token)
    assert code == 400 and "q" in body["fields"]
    assert _call("get", "/api/v1/search/?q=zephyrine")[0] == 401


def test_an_operator_cannot_write_alert_channels_through_the_api():
    """The admin keeps channels to superusers (their destinations are secrets and they decide who hears of
    every server); the API refused only readers limited to groups."""
    from alerts.models import Channel

    _, operator = _user("o", "operator")
    Channel.objects.create(name="opshook", url="json://127.0.0.1:9/root-hook")
    assert _call("patch", "/api/v1/channels/opshook/", operator, {"url": "json://127.0.0.1:9/mine"})[0] == 403
    assert Channel.objects.get(name="opshook").url == "json://127.0.0.1:9/root-hook"
    assert _call("post", "/api/v1/channels/", operator, {"name": "mine", "url": "json://127.0.0.1:9/x"})[0] == 403
    assert _call("post", "/api/v1/channels/", operator, {"name": "o", "url": "email:o@lab.org",
                                                         "owner_of": "o@lab.org"})[0] == 403  # fmt: skip
    assert _call("delete", "/api/v1/channels/opshook/", operator)[0] == 403
    assert list(Channel.objects.values_list("name", flat=True)) == ["opshook"]


def test_a_limited_operator_cannot_reach_another_groups_servers_through_a_job():
    Server.objects.create(scheme="http", host="a.example", port=80, group="physics")
    Server.objects.create(scheme="http", host="b.example", port=80, group="chemistry")
    _job("chem", group="chemistry", seeds=["http://b.example/"])
    _, operator = _user("p", "operator", "servers:physics")
    job = {"name": "mine", "group": "physics", "seeds": ["http://b.example/"], "delay": 3600}
    code, body = _call("post", "/api/v1/jobs/", operator, job)
    assert code == 403 and "not a server of your groups" in body["detail"]
    code, body = _call("post", "/api/v1/jobs/", operator, {**job, "seeds": ["http://new.example/"]})
    assert code == 403  # a server not known yet would be of no group
    code, body = _call("post", "/api/v1/jobs/", operator, {**job, "name": "chem", "seeds": ["http://a.example/"]})
    assert code == 400 and "exists" not in body["detail"] and "chem" in body["detail"]
    assert _call("post", "/api/v1/jobs/", operator, {**job, "seeds": ["http://a.example/"]})[0] == 201
    code, body = _call("patch", "/api/v1/jobs/mine/", operator, {"seeds": ["http://b.example/"]})
    assert code == 403 and Job.objects.get(name="mine").seeds == ["http://a.example/"]


def test_a_job_name_with_a_nul_is_a_400_and_a_lookup_of_one_a_404():
    _, operator = _user("o", "operator")
    code, body = _call("post", "/api/v1/jobs/", operator, {"name": "a\x00b", "seeds": ["http://a.example/"]})
    assert code == 400 and "name" in body["fields"]
    response = Client().get("/api/v1/jobs/a%00b/", HTTP_AUTHORIZATION=f"Bearer {operator}")
    assert response.status_code in (400, 404)
    code, body = _call("post", "/api/v1/jobs/", operator, {"name": "r", "seeds": ["http://a.example/"],
                                                           "revisit_after": 10**15})  # fmt: skip
    assert code == 400 and "revisit_after" in body["fields"]


@pytest.mark.parametrize("site", ["x:²", "x:99999999999999999999", "x:70000", "a.test:80"])
def test_a_search_site_that_is_no_server_answers_without_an_error(site):
    from urllib.parse import quote

    _, token = _user("v", "viewer")
    code, body = _call("get", f"/api/v1/search/?q=zephyrine&site={quote(site)}", token)
    assert code == 200 and body["results"] == []


def test_a_token_made_in_the_admin_is_shown_in_the_page_never_in_a_cookie():
    """Django's messages travel in a signed cookie that anyone holding it can read: a token in one would be
    on the wire and in the browser after the page that showed it."""
    from dashboard.tokens import api_token_user

    user = User.objects.create_user("v", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    response = client.post("/admin/dashboard/apitoken/add/", {"user": user.pk, "name": "ci", "_save": "Save"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    token = page.split('data-token="', 1)[1].split('"', 1)[0]
    assert api_token_user(token) == user
    assert all(token not in morsel.value for morsel in response.cookies.values())
    assert token not in client.get("/admin/dashboard/apitoken/").content.decode()
