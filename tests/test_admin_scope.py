"""Readers within their groups in the admin too: a reader limited to server groups (crawlcore.access) sees only
its groups' rows in every admin list, change page, history and log, gets 404 for another group's row and 403
for the pages that describe the whole crawl; only a superuser edits a server's address, trust and owner
e-mail; no value of any admin filter answers 500."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.forms.models import model_to_dict
from django.utils import timezone

from alerts.models import Channel, Event, Mute, Notification
from crawlcore.access import SUPERUSER_SERVER_FIELDS
from crawlcore.admin import ReaderScopedAdmin
from crawlcore.models import Page, Server, StatusCheck, Url
from monitoring.models import MaintenanceWindow, ServerMonitor

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999999"
OUR_APPS = {"crawladmin", "monitoring", "ranking", "analyzer", "alerts", "reports", "archive", "dashboard"}


def staff(client, name: str, *groups: str, superuser: bool = False):
    user = User.objects.create_user(name, password="pw-not-secret", is_staff=True, is_superuser=superuser)
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client.force_login(user)
    return client


@pytest.fixture
def faculties():
    """A server of group "uni" and one of "physics", each with a URL, a page, a check, a monitor and a
    notification."""
    now = timezone.now()
    channel = Channel.objects.create(name="ops", url="json://127.0.0.1:9/")
    made = {}
    for group, host in (("uni", "uni.example"), ("physics", "physics.example")):
        server = Server.objects.create(scheme="http", host=host, port=80, group=group)
        url = Url.objects.create(server=server, url=f"http://{host}/secret-{group}", url_hash=f"{group:0>24}")
        page = Page.objects.create(url=url, title=f"title of {group}", fetched_at=now)
        StatusCheck.objects.create(
            server=server, requested_url=url.url, checked_at=now, category="normal", latency_ms=5.0
        )
        ServerMonitor.objects.create(server=server, status="normal")
        event = Event.objects.create(kind="down", server=server, at=now, reason=f"{group} went down")
        Notification.objects.create(event=event, channel=channel, server=server, created_at=now, next_attempt_at=now)
        made[group] = (server, url, page)
    return made


def test_a_viewer_of_one_group_gets_404_for_another_groups_server_in_the_admin(client, faculties):
    staff(client, "physviewer", "viewer", "servers:physics")
    uni, _, _ = faculties["uni"]
    physics, _, _ = faculties["physics"]
    listing = client.get("/admin/crawladmin/server/").content.decode()
    assert "physics.example" in listing and "uni.example" not in listing
    assert client.get(f"/admin/crawladmin/server/{physics.id}/change/").status_code == 200
    assert client.get(f"/admin/crawladmin/server/{uni.id}/change/").status_code == 404
    assert client.get(f"/admin/crawladmin/server/{uni.id}/history/").status_code == 404
    assert client.get(f"/admin/monitoring/servermonitor/{uni.id}/change/").status_code == 404


def test_every_list_and_log_shows_a_limited_reader_only_its_groups_rows(client, faculties):
    staff(client, "physviewer", "viewer", "servers:physics")
    _, uni_url, uni_page = faculties["uni"]
    for path in (
        "/admin/crawladmin/url/",
        "/admin/crawladmin/page/",
        "/admin/crawladmin/statuscheck/",
        "/admin/monitoring/servermonitor/",
        "/admin/alerts/notification/",
        f"/admin/crawladmin/url/?server={faculties['uni'][0].id}",
    ):
        page = client.get(path)
        assert page.status_code == 200, path
        body = page.content.decode()
        assert "uni.example" not in body and "title of uni" not in body, path
    assert "physics.example" in client.get("/admin/alerts/notification/").content.decode()
    assert client.get(f"/admin/crawladmin/page/{uni_page.pk}/change/").status_code == 404
    assert client.get(f"/admin/crawladmin/url/{uni_url.pk}/change/").status_code == 404
    # The server filter offers only the reader's servers.
    assert "uni.example" not in client.get("/admin/crawladmin/sitemap/").content.decode()


def test_pages_of_the_whole_crawl_are_refused_to_a_limited_reader(client, faculties):
    staff(client, "physviewer", "viewer", "servers:physics")
    assert client.get("/admin/ranking/rankrun/").status_code == 403
    index = client.get("/admin/").content.decode()
    assert "/admin/ranking/rankrun/" not in index and "/admin/crawladmin/server/" in index
    staff(client, "viewer", "viewer")  # an unlimited viewer reads them
    assert client.get("/admin/ranking/rankrun/").status_code == 200
    assert "uni.example" in client.get("/admin/crawladmin/server/").content.decode()


def test_every_admin_page_of_ours_is_cut_to_the_readers_groups():
    pages = [(m, a) for m, a in admin.site._registry.items() if m._meta.app_label in OUR_APPS]
    assert len(pages) > 15
    assert [m.__name__ for m, a in pages if not isinstance(a, ReaderScopedAdmin)] == []


def test_a_limited_operator_cannot_write_outside_its_groups(client, faculties):
    staff(client, "physop", "operator", "servers:physics")
    uni, _, _ = faculties["uni"]
    physics, _, _ = faculties["physics"]
    now = timezone.now()
    window = {
        "server": uni.id,
        "starts_at_0": now.date().isoformat(),
        "starts_at_1": "00:00:00",
        "ends_at_0": now.date().isoformat(),
        "ends_at_1": "23:00:00",
        "reason": "x",
    }
    page = client.post("/admin/monitoring/maintenancewindow/add/", window)
    assert page.status_code == 200  # the form again: another group's server is not a choice
    assert not MaintenanceWindow.objects.exists()
    page = client.post("/admin/monitoring/maintenancewindow/add/", {**window, "server": physics.id})
    assert page.status_code == 302 and MaintenanceWindow.objects.get().server_id == physics.id
    # A mute typed for another group is refused and rolled back.
    denied = client.post("/admin/alerts/mute/add/", {"group": "uni", "until_0": "2099-01-01", "until_1": "00:00"})
    assert denied.status_code == 403 and not Mute.objects.exists()


def _server_form(server: Server, **changes) -> dict:
    data = model_to_dict(server)
    data.update(changes)
    return {k: ("" if v is None else v) for k, v in data.items()}


def test_only_a_superuser_edits_a_servers_address_trust_and_owner(client, faculties):
    physics, _, _ = faculties["physics"]
    changes = {
        "trusted": "on",
        "host": "10.0.0.5",
        "scheme": "https",
        "port": 8443,
        "ip": "10.0.0.5",
        "owner_email": "op@example.org",
        "owner_name": "Physics web team",
    }
    staff(client, "op", "operator")
    form = client.get(f"/admin/crawladmin/server/{physics.id}/change/").content.decode()
    for name in SUPERUSER_SERVER_FIELDS:
        assert f'name="{name}"' not in form, name
    saved = client.post(f"/admin/crawladmin/server/{physics.id}/change/", _server_form(physics, **changes))
    assert saved.status_code == 302
    physics.refresh_from_db()
    assert (physics.trusted, physics.host, physics.scheme, physics.port, physics.ip, physics.owner_email) == (
        False,
        "physics.example",
        "http",
        80,
        None,
        "",
    )
    assert physics.owner_name == "Physics web team"  # the rest of the form is the operator's

    staff(client, "root", superuser=True)
    saved = client.post(f"/admin/crawladmin/server/{physics.id}/change/", _server_form(physics, **changes))
    assert saved.status_code == 302
    physics.refresh_from_db()
    assert (physics.trusted, physics.host, physics.owner_email) == (True, "10.0.0.5", "op@example.org")


@pytest.mark.parametrize("who", ["superuser", "physviewer"])
def test_no_admin_filter_value_answers_500(client, faculties, who):
    if who == "superuser":
        staff(client, "root", superuser=True)
    else:
        staff(client, "physviewer", "viewer", "servers:physics")
    client.raise_request_exception = False
    failed = []
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        paths = [f"{base}{HUGE}/change/", f"{base}{HUGE}/history/", f"{base}?pk={HUGE}", f"{base}?server=²"]
        for field in model._meta.get_fields():
            if field.many_to_one or field.one_to_one:
                paths += [f"{base}?{field.name}={HUGE}", f"{base}?{field.name}__id__exact={HUGE}"]
        for path in paths:
            status = client.get(path).status_code
            if status >= 500:
                failed.append((path, status))
    assert failed == []


def test_a_limited_operator_saves_jobs_of_its_groups_seeded_on_its_servers_only(client, faculties):
    from crawlcore.models import Job

    Job.objects.create(name="chem-only", group="chemistry", seeds=["http://chem.example/"])
    staff(client, "p_op", "operator", "servers:physics")
    physics = Server.objects.get(group="physics").origin
    uni = Server.objects.get(group="uni").origin
    form = {"name": "mine", "group": "physics", "seeds": f'["{uni}/"]', "scope": "host", "include": "[]",
            "exclude": "[]", "windows": "[]", "time_zone": "UTC", "enabled": "on", "_save": "Save"}  # fmt: skip
    response = client.post("/admin/crawladmin/job/add/", form)
    assert response.status_code == 200 and "not a server of your groups" in response.content.decode()
    assert not Job.objects.filter(name="mine").exists()
    response = client.post("/admin/crawladmin/job/add/", {**form, "name": "chem-only", "seeds": f'["{physics}/"]'})
    page = response.content.decode()
    assert response.status_code == 200 and "cannot be used" in page and "already exists" not in page
    response = client.post("/admin/crawladmin/job/add/", {**form, "seeds": f'["{physics}/"]'})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Job.objects.get(name="mine").group == "physics"
