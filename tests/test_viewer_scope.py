"""Who sees what: the analyzer, the API and /metrics need a reader (viewer or operator group, a
superuser, or the API token) like the dashboard; a reader limited to server groups (Django groups named
`servers:<group>`, crawlcore.access) sees only those groups' servers, and not the whole-crawl pages."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from crawlcore.models import Server
from monitoring.models import ServerMonitor

from .test_dashboard import _fresh_cache, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

WHOLE_CRAWL = ("/dashboard/crawl/", "/analyzer/", "/api/summary", "/metrics")


def reader(*groups: str) -> Client:
    user = User.objects.create_user("-".join(groups) or "nobody", password="pw-not-secret")
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def faculties(site):  # noqa: F811
    """The site's a.example and b.example in group "uni"; a monitored server of the physics faculty."""
    a, b = site
    physics = Server.objects.create(scheme="http", host="physics.example", port=80, group="physics")
    ServerMonitor.objects.create(server=physics, status="normal")
    Server.objects.filter(id=physics.id).update(load_profile=[5.0] * 24)
    return a, b, physics


def test_a_user_in_no_group_is_refused_everywhere(faculties):
    a, _, _ = faculties
    client = reader()
    for path in ("/dashboard/", f"/dashboard/servers/{a.id}/", "/analyzer/", "/dashboard/dead-links/"):
        assert client.get(path).status_code == 403, path
    for path in ("/api/summary", "/api/servers", "/metrics"):
        assert client.get(path).status_code == 403, path


def test_an_unlimited_viewer_sees_every_server_and_the_whole_crawl_pages(faculties):
    a, b, physics = faculties
    client = reader("viewer")
    grid = client.get("/dashboard/").content.decode()
    assert all(s.origin in grid for s in (a, b, physics))
    for path in WHOLE_CRAWL:
        assert client.get(path).status_code == 200, path
    assert len(client.get("/api/servers").json()["servers"]) == Server.objects.count()


def test_a_viewer_limited_to_a_group_sees_only_its_servers(faculties):
    a, b, physics = faculties
    client = reader("viewer", "servers:physics")

    grid = client.get("/dashboard/").content.decode()
    assert physics.origin in grid and a.origin not in grid and b.origin not in grid
    assert '<option value="uni"' not in grid  # the other groups' names are not offered either
    tiles = client.get("/dashboard/grid.json").json()
    assert [t["id"] for t in tiles["tiles"]] == [physics.id] and tiles["total"] == 1
    assert sum(tiles["counts"].values()) == 1
    assert client.get("/dashboard/?group=uni").status_code == 404
    assert client.get("/dashboard/?group=physics").status_code == 200

    assert client.get(f"/dashboard/servers/{physics.id}/").status_code == 200
    assert client.get(f"/dashboard/servers/{a.id}/").status_code == 404
    assert client.get(f"/dashboard/dead-links/{a.id}/").status_code == 404
    assert f"/dashboard/dead-links/{a.id}/" not in client.get("/dashboard/dead-links/").content.decode()

    heat = client.get("/dashboard/heatmap/").content.decode()
    assert physics.origin in heat and b.origin not in heat
    assert client.get("/dashboard/heatmap/?group=uni").status_code == 404

    servers = client.get("/api/servers").json()
    assert [s["id"] for s in servers["servers"]] == [physics.id] and servers["count"] == 1
    for path in WHOLE_CRAWL:
        assert client.get(path).status_code == 403, path


def test_a_viewer_of_two_groups_sees_both_and_its_dead_link_report(faculties):
    a, b, physics = faculties
    client = reader("viewer", "servers:physics", "servers:uni")
    ids = {s["id"] for s in client.get("/api/servers").json()["servers"]}
    assert ids == {a.id, b.id, physics.id}
    assert f"/dashboard/dead-links/{a.id}/" in client.get("/dashboard/dead-links/").content.decode()
    assert client.get(f"/dashboard/dead-links/{a.id}/").status_code == 200


def test_the_token_reads_everything(faculties, settings):
    settings.CRAWLADMIN_API_TOKEN = "t0ken"
    client = Client(headers={"Authorization": "Bearer t0ken"})
    assert client.get("/api/servers").json()["count"] == Server.objects.count()
    assert client.get("/metrics").status_code == 200


def test_a_limited_viewers_grid_is_not_served_from_an_unlimited_viewers_cache(faculties):
    a, _, physics = faculties
    assert a.origin in reader("viewer").get("/dashboard/").content.decode()
    assert a.origin not in reader("viewer", "servers:physics").get("/dashboard/").content.decode()
