"""The servers at scale: the list view beside the tiles (`?view=list`), the search (`?q=`) and the filters by
status, kind and group kept in the URL, natural order with the problems first, groups that fold, paging, and
the bulk actions an operator (and no one else) takes on the servers they may change."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from alerts.models import Mute
from crawlcore.models import Server
from dashboard import cache
from dashboard.ordering import natural_key
from monitoring.models import ServerMonitor
from monitoring.services.monitors import monitor_add

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def user_in(*groups: str, name: str = "u") -> User:
    user = User.objects.create_user(name, password="pw-not-secret")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return user


def servers(n: int, group: str = "lab", first: int = 1) -> list[Server]:
    now = timezone.now()
    made = []
    for i in range(first, first + n):
        s = Server.objects.create(scheme="http", host=f"127.0.1.{i}", port=80, group=group)
        ServerMonitor.objects.create(server=s, status="normal", last_check_at=now, interval_s=300)
        made.append(s)
    return made


def names_in(html: str) -> list[str]:
    return re.findall(r'<td class="name"><a href="[^"]+">([^<]+)</a>', html)


def test_natural_key_sorts_addresses_by_number_and_names_as_people_do():
    assert sorted(["127.0.1.10", "127.0.1.9", "127.0.1.100", "127.0.1.1"], key=natural_key) == [
        "127.0.1.1", "127.0.1.9", "127.0.1.10", "127.0.1.100"
    ]  # fmt: skip
    assert sorted(["web10", "Web2", "web1"], key=natural_key) == ["web1", "Web2", "web10"]
    assert sorted(["b", "10", "a2"], key=natural_key) == ["10", "a2", "b"]  # mixed starts still compare


def test_the_list_shows_one_row_a_server_in_natural_order_with_problems_first(client):
    made = servers(12)
    ServerMonitor.objects.filter(server=made[10]).update(status="disconnect", status_since=timezone.now())
    client.force_login(user_in("viewer"))
    html = client.get("/dashboard/?view=list").content.decode()
    shown = names_in(html)
    assert shown[0] == "http://127.0.1.11"  # the one down, first
    rest = [f"http://127.0.1.{i}" for i in range(1, 13) if i != 11]
    assert shown[1:] == rest  # .2 before .10: by number
    assert 'name="ids"' not in html  # a viewer gets no bulk selection


def test_search_by_part_of_a_name_on_the_list_and_the_tiles_and_filter_by_kind(client):
    servers(5)
    monitor_add(kind="heartbeat", target="nightly backup", every_s=86400)
    monitor_add(kind="tcp", target="db.uni-test.org:5432", name="Main database")
    client.force_login(user_in("viewer"))
    listed = client.get("/dashboard/", {"view": "list", "q": "backup"}).content.decode()
    assert names_in(listed) == ["nightly backup"]
    tiles = client.get("/dashboard/", {"q": "datab"}).content.decode()
    assert '<span class="origin">Main database</span>' in tiles and "127.0.1.1" not in tiles
    assert 'value="datab"' in tiles  # the search stays in the form (and the URL)
    by_kind = client.get("/dashboard/", {"view": "list", "kind": "tcp"}).content.decode()
    assert names_in(by_kind) == ["Main database"]
    assert "heartbeat://" not in client.get("/dashboard/?view=list").content.decode()


def test_the_list_pages_and_keeps_its_filters_in_the_links(client):
    servers(130)
    client.force_login(user_in("viewer"))
    first = client.get("/dashboard/", {"view": "list", "group": "lab"}).content.decode()
    assert len(names_in(first)) == 100 and "1–100 of 130 servers" in first
    assert "?view=list&amp;group=lab&amp;offset=100" in first
    second = client.get("/dashboard/", {"view": "list", "group": "lab", "offset": "100"}).content.decode()
    assert names_in(second)[0] == "http://127.0.1.101" and len(names_in(second)) == 30


def test_groups_fold_and_say_their_problems(client):
    servers(3, group="physics")
    down = servers(2, group="chemistry", first=10)
    ServerMonitor.objects.filter(server=down[0]).update(status="error", status_since=timezone.now())
    client.force_login(user_in("viewer"))
    html = client.get("/dashboard/", {"view": "list", "by": "group", "closed": "physics"}).content.decode()
    assert '<details class="lgroup" data-group="chemistry" open>' in html
    assert '<details class="lgroup" data-group="physics">' in html  # folded, as the URL says
    assert "2 servers, <span class=\"problems\">1 with a problem</span>" in html


def post_bulk(client, action: str, ids, **extra):
    return client.post("/dashboard/servers/bulk", {"action": action, "ids": [str(i) for i in ids], **extra})


def test_an_operator_checks_now_moves_and_mutes_servers_in_bulk(client):
    made = servers(3)
    client.force_login(user_in("operator"))
    later = timezone.now() + timezone.timedelta(hours=1)
    ServerMonitor.objects.update(next_check_at=later)
    response = post_bulk(client, "check", [s.id for s in made[:2]], next="/dashboard/?view=list")
    assert response.status_code == 302 and response["Location"] == "/dashboard/?view=list"
    due = ServerMonitor.objects.filter(next_check_at__lt=later).values_list("server_id", flat=True)
    assert sorted(due) == sorted(s.id for s in made[:2])
    post_bulk(client, "move", [made[0].id], group="physics")
    assert Server.objects.get(id=made[0].id).group == "physics"
    post_bulk(client, "mute", [s.id for s in made], **{"for": "4h"})
    assert Mute.objects.filter(server_id__in=[s.id for s in made]).count() == 3
    page = client.get("/dashboard/?view=list").content.decode()
    assert 'name="ids"' in page and "csrfmiddlewaretoken" in page


def test_bulk_actions_are_refused_to_viewers_outside_the_scope_and_without_csrf(client):
    made = servers(2)
    other = servers(1, group="secret", first=50)[0]
    client.force_login(user_in("viewer"))
    assert post_bulk(client, "check", [made[0].id]).status_code == 403
    client.force_login(user_in("operator", "servers:lab", name="limited"))
    refused = post_bulk(client, "move", [made[0].id, other.id], group="lab")
    assert refused.status_code == 302
    assert Server.objects.get(id=other.id).group == "secret"  # another group's server: untouched
    assert "not yours to change" in client.get("/dashboard/").content.decode()
    post_bulk(client, "move", [made[0].id], group="secret")
    assert Server.objects.get(id=made[0].id).group == "lab"  # not into another group either
    strict = type(client)(enforce_csrf_checks=True)
    strict.force_login(user_in("operator", name="op2"))
    assert post_bulk(strict, "check", [made[0].id]).status_code == 403


def test_bad_bulk_input_is_one_clear_message_not_a_500(client):
    client.force_login(user_in("operator"))
    made = servers(1)
    for data in ({"action": "check"}, {"action": "check", "ids": ["x1"]}, {"action": "nope", "ids": [str(made[0].id)]}):
        response = client.post("/dashboard/servers/bulk", data)
        assert response.status_code == 302
    page = client.get("/dashboard/").content.decode()
    assert "no server selected" in page or "unknown action" in page
    assert client.get("/dashboard/?offset=abc").status_code == 400


def test_a_bulk_pause_of_a_group_holds_their_crawl_through_the_health_service_and_resume_lifts_it(client):
    from crawlcore.selectors_health import held_server_ids

    lab = servers(3)
    other = servers(1, group="physics", first=40)
    client.force_login(user_in("operator"))
    page = client.get("/dashboard/", {"view": "list", "group": "lab"}).content.decode()
    assert 'value="pause"' in page
    post_bulk(client, "pause", [s.id for s in lab])
    held = set(held_server_ids())
    assert {s.id for s in lab} <= held and other[0].id not in held
    post_bulk(client, "resume", [s.id for s in lab])
    assert not {s.id for s in lab} & set(held_server_ids())


def test_the_crawl_pages_priority_table_lists_no_monitor_that_is_not_crawled(client):
    from crawlcore.services.schedule import schedule_table

    web = servers(2)
    monitor_add(kind="dns", target="campus.test")
    monitor_add(kind="tcp", target="db.uni-test.org:5432")
    monitor_add(kind="heartbeat", target="nightly backup")
    table = schedule_table()
    assert set(table.servers) == {s.id for s in web}
