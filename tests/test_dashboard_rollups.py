"""The dashboard's precomputed figures (dashboard.rollups): what each page shows after beat's refresh, how
old a figure may be before a reader recounts it, that the check totals stay exact between refreshes, and
that the broken-link rollup follows targets that fail and recover. The PostgreSQL path (advisory locks,
the upserts) is in test_dashboard_rollups_pg.py."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from crawlcore.db import locks
from crawlcore.models import Link, Server, StatusCheck, Url
from crawlcore.selectors import crawl_summary
from crawlcore.services.urls import NewUrl, url_transition, urls_insert
from crawler.lifecycle import Agent, Event, State
from dashboard import cache, rollups, selectors_crawl, selectors_server
from dashboard.models import ServerRollup, Snapshot
from reports.models import LinkBreak

pytestmark = pytest.mark.django_db

TOKEN = "rollup-test-token"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def viewer(client):
    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    return client


@pytest.fixture
def site():
    """Server a.example: a home page linking to a Dead URL, a NoResponse1 URL and a live one."""
    ins = urls_insert(
        urls=[
            NewUrl(u, depth=0)
            for u in ("http://a.example/", "http://a.example/gone", "http://a.example/slow", "http://a.example/ok")
        ],
        trusted=True,
    ).ids
    Url.objects.filter(id=ins["http://a.example/"]).update(state="visited")
    Url.objects.filter(id=ins["http://a.example/gone"]).update(state="dead", failure_kind="http_status")
    Url.objects.filter(id=ins["http://a.example/slow"]).update(state="noresponse1", failure_kind="header_timeout")
    Url.objects.filter(id=ins["http://a.example/ok"]).update(state="visited")
    home = ins["http://a.example/"]
    for target in ("gone", "slow", "ok"):
        Link.objects.create(from_url_id=home, to_url_id=ins[f"http://a.example/{target}"])
    return Server.objects.get(host="a.example"), ins


def _age(name: str, seconds: float) -> None:
    """Make the stored figures `name` look `seconds` old (and forget this process's copy)."""
    Snapshot.objects.filter(name=name).update(computed_at=timezone.now() - timedelta(seconds=seconds))
    cache.clear()


def _check(server, *, category: str, ago: timedelta, failure_kind: str = "") -> StatusCheck:
    return StatusCheck.objects.create(
        server=server,
        requested_url=f"http://{server.host}/",
        checked_at=timezone.now() - ago,
        status_code=None if category == "disconnect" else 200,
        category=category,
        failure_kind=failure_kind,
        latency_ms=10,
        agent="monitor",
    )


# --------------------------------------------------------------------------------------------------
# The figures' life: stored, shared, recounted when older than the reader accepts


def test_figures_are_computed_once_and_shared_until_too_old():
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    first = rollups.figures("t", max_age=60, compute=compute)
    cache.clear()  # another process: it reads the stored figures instead of computing
    assert rollups.figures("t", max_age=60, compute=compute).data == first.data == {"n": 1}
    _age("t", 61)
    assert rollups.figures("t", max_age=60, compute=compute).data == {"n": 2}
    assert len(calls) == 2 and Snapshot.objects.get(name="t").data == {"n": 2}


def test_a_reader_that_finds_a_computation_running_gets_the_previous_figures():
    rollups.figures("t", max_age=60, compute=lambda: {"n": 1})
    _age("t", 120)
    lock = locks._process_locks[("dashboard", "t")]
    assert lock.acquire(blocking=False)  # someone else is computing "t" right now
    try:
        stale = rollups.figures("t", max_age=60, compute=lambda: pytest.fail("computed twice at once"))
        assert stale.data == {"n": 1} and stale.age >= 120
        assert rollups.figures_refresh("t", lambda: pytest.fail("computed twice at once")) is None
    finally:
        lock.release()
    assert rollups.figures("t", max_age=60, compute=lambda: {"n": 2}).data == {"n": 2}


# --------------------------------------------------------------------------------------------------
# /api/summary and the crawl page


def test_api_summary_moves_within_seconds_and_equals_crawl_summary(client, settings, site):
    settings.CRAWLADMIN_API_TOKEN = TOKEN
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    server, _ = site
    _check(server, category="normal", ago=timedelta(days=1))
    first = client.get("/api/summary", **auth).json()
    assert first["urls"] == 4 and first["states"]["dead"] == 1 and first["checks"]["normal"] == 1
    urls_insert(urls=[NewUrl("http://a.example/new", depth=1)], trusted=True)
    _check(server, category="error", ago=timedelta(seconds=1))
    # Within API_COUNTS_MAX_AGE the URL counts are the shared ones (as_of says when); the checks are exact.
    again = client.get("/api/summary", **auth).json()
    assert again["urls"] == 4 and again["as_of"] == first["as_of"] and again["checks"]["error"] == 1
    _age(rollups.CRAWL_SUMMARY, selectors_crawl.API_COUNTS_MAX_AGE + 1)
    moved = client.get("/api/summary", **auth).json()
    assert moved["urls"] == 5 and moved["states"]["init"] == 1 + first["states"]["init"]
    expected = crawl_summary()
    assert {k: moved[k] for k in expected} == expected


def test_crawl_page_shows_counts_as_of_their_computation(viewer, site):
    html = viewer.get("/dashboard/crawl/").content.decode()
    assert "<td>dead</td><td>1</td>" in html and "As of" in html
    Url.objects.filter(state="dead").update(state="init")
    assert "<td>dead</td><td>1</td>" in viewer.get("/dashboard/crawl/").content.decode()  # a minute at most
    _age(rollups.CRAWL_SUMMARY, selectors_crawl.PAGE_COUNTS_MAX_AGE + 1)
    assert "<td>dead</td><td>0</td>" in viewer.get("/dashboard/crawl/").content.decode()


# --------------------------------------------------------------------------------------------------
# Check totals: a rollup of the settled checks plus a live count of the newer ones


def test_check_totals_stay_exact_between_refreshes(site):
    server, _ = site
    for category in ("normal", "normal", "error"):
        _check(server, category=category, ago=timedelta(hours=2))
    _check(server, category="delay", ago=timedelta(seconds=30))  # not settled yet: counted live
    refreshed = rollups.rollups_refresh()
    rollup = Snapshot.objects.get(name=rollups.CHECK_TOTALS).data
    assert refreshed["servers"] == 1 and rollup["categories"]["normal"] == 2 and rollup["categories"]["delay"] == 0
    _check(server, category="disconnect", ago=timedelta(seconds=1))
    _check(server, category="normal", ago=timedelta(seconds=1))
    totals = selectors_crawl.check_totals()
    assert totals == crawl_summary()["checks"]
    assert totals == {"normal": 3, "delay": 1, "disconnect": 1, "error": 1}


def test_check_totals_add_what_settled_since_and_recount_hourly(site):
    server, _ = site
    old = [_check(server, category="error", ago=timedelta(days=20)) for _ in range(3)]
    rollups.rollups_refresh()
    assert selectors_crawl.check_totals()["error"] == 3
    recounted_at = Snapshot.objects.get(name=rollups.CHECK_TOTALS).data["recounted_at"]
    _check(server, category="error", ago=timedelta(hours=1))
    rollups.rollups_refresh()  # adds the newly settled check to the stored totals
    stored = Snapshot.objects.get(name=rollups.CHECK_TOTALS).data
    assert stored["categories"]["error"] == 4 and stored["recounted_at"] == recounted_at
    StatusCheck.objects.filter(id__in=[c.id for c in old[:2]]).delete()  # the daily prune of old checks
    stored["recounted_at"] = (timezone.now() - rollups.CHECK_TOTALS_RECOUNT).isoformat()
    Snapshot.objects.filter(name=rollups.CHECK_TOTALS).update(data=stored)
    rollups.rollups_refresh()  # an hour after the last recount: counted afresh
    cache.clear()
    assert selectors_crawl.check_totals()["error"] == 2 == crawl_summary()["checks"]["error"]


# --------------------------------------------------------------------------------------------------
# A server's figures (ServerRollup)


def test_server_page_reads_its_rollup_and_shows_the_refreshed_counts(viewer, site):
    server, ins = site
    _check(server, category="error", ago=timedelta(hours=1), failure_kind="http_status")
    rollups.rollups_refresh()
    assert ServerRollup.objects.get(server_id=server.id).url_states == {"visited": 2, "dead": 1, "noresponse1": 1}
    Url.objects.filter(id=ins["http://a.example/slow"]).update(state="visited", failure_kind="")

    def states(html: str) -> dict[str, int]:
        block = html.split("<h2>URLs by state</h2>", 1)[1].split("</table>", 1)[0]
        return {s: int(n) for s, n in re.findall(r"<td>(\w+)</td><td>(\d+)</td>", block)}

    page = viewer.get(f"/dashboard/servers/{server.id}/").content.decode()
    assert states(page)["noresponse1"] == 1 and "<td>http_status</td><td>1</td>" in page  # as of the refresh
    rollups.rollups_refresh()
    page = viewer.get(f"/dashboard/servers/{server.id}/").content.decode()
    assert states(page) == {"init": 0, "visited": 3, "noresponse1": 0, "noresponse2": 0, "dead": 1}


def test_a_rollup_older_than_its_max_age_is_not_shown(viewer, site):
    server, ins = site
    rollups.rollups_refresh()
    Url.objects.filter(id=ins["http://a.example/gone"]).update(state="init")
    stale = timezone.now() - timedelta(seconds=selectors_server.SERVER_ROLLUP_MAX_AGE + 5)
    ServerRollup.objects.update(computed_at=stale)
    assert selectors_server.server_figures(server_id=server.id)["url_states"]["dead"] == 0  # counted now instead


# --------------------------------------------------------------------------------------------------
# The dead-link report (the link reports' record, LinkBreak, summed per site)


def test_dead_link_report_after_refresh(viewer, site):
    server, ins = site
    report = viewer.get("/dashboard/dead-links/").content.decode()
    assert f"/dashboard/dead-links/{server.id}/" in report
    assert re.search(r"<td>2</td><td>1</td><td>2</td><td>1</td>", report)  # links, pages, targets, Dead
    # A target recovers and another fails (through the crawl's write path, which records each move): the site's
    # page shows the recovery at once (targets are read live), the new failure from the next refresh on.
    slow, ok = ins["http://a.example/slow"], ins["http://a.example/ok"]
    moves = [
        (slow, State.NO_RESPONSE_1, Event.RESPONDS, Agent.INACTIVE_SCAN, {"failure_kind": ""}),
        (ok, State.VISITED, Event.NO_RESPONSE, Agent.ACTIVE_SCAN, {"failure_kind": "refused"}),
        (ok, State.NO_RESPONSE_1, Event.NO_RESPONSE, Agent.INACTIVE_SCAN, {}),
    ]
    for url_id, expected, event, agent, fields in moves:
        assert url_transition(url_id=url_id, expected=expected, event=event, agent=agent, owner=None, **fields)
    page = viewer.get(f"/dashboard/dead-links/{server.id}/").content.decode()
    assert "http://a.example/slow" not in page and "http://a.example/ok" not in page
    done = rollups.dead_links_refresh()
    assert (done["removed"], done["changed"]) == (1, 1)
    cache.clear()
    page = viewer.get(f"/dashboard/dead-links/{server.id}/").content.decode()
    assert "http://a.example/ok" in page and ">noresponse2<" in page and "http://a.example/gone" in page
    assert set(LinkBreak.objects.filter(fixed_at=None).values_list("to_url_id", "to_url__state")) == {
        (ins["http://a.example/gone"], "dead"),
        (ins["http://a.example/ok"], "noresponse2"),
    }
    again = rollups.dead_links_refresh()
    assert (again["removed"], again["changed"]) == (0, 0)  # nothing changed: nothing rewritten


def test_dead_links_of_a_site_come_in_pages(viewer, site, monkeypatch):
    server, ins = site
    monkeypatch.setattr(selectors_crawl, "DEAD_LINKS_PAGE", 1)
    page = viewer.get(f"/dashboard/dead-links/{server.id}/").content.decode()
    first = page.split("<h2>Every broken link</h2>")[1]  # the paged table (the first page also leads with the top ten)
    assert "http://a.example/gone" in first and "http://a.example/slow" not in first
    after = re.search(r'href="\?after=(\d+-\d+)"', first).group(1)
    second = viewer.get(f"/dashboard/dead-links/{server.id}/?after={after}").content.decode()
    assert "http://a.example/slow" in second and "http://a.example/gone" not in second
    assert "?after=" not in second  # the last page


# --------------------------------------------------------------------------------------------------
# Pages every viewer sees alike: rendered once per few seconds


def test_grid_tiles_are_shared_for_a_few_seconds(viewer, site):
    server, _ = site
    html = viewer.get("/dashboard/").content.decode()
    assert f'data-server="{server.id}"' in html and "as of" in html
    Server.objects.create(scheme="http", host="b.example", port=80)
    assert "b.example" not in viewer.get("/dashboard/").content.decode()  # the same tiles, as of then
    cache.clear()  # SHARED_VIEW_TTL later
    assert "b.example" in viewer.get("/dashboard/").content.decode()


def test_made_up_filters_are_not_cached(viewer, site):
    for i in range(3):
        assert viewer.get(f"/dashboard/?group=nope{i}&offset=7").status_code == 200
    assert not [k for k in cache._values if "nope" in k]


def test_the_minute_counts_take_pages_and_links_from_the_estimates_and_a_crawl_counts_them(db, monkeypatch):
    """Counting the links reads the largest table whole (seconds at a few million rows): beat's figures,
    refreshed every minute, take the database's estimate; the crawl's own summary counts."""
    from crawlcore import selectors as crawl_selectors
    from crawlcore.db import estimates

    sizes = {"link": 4_000_000, "page": 150_000}
    monkeypatch.setattr(estimates, "table_rows", lambda model: sizes[model._meta.model_name])
    data = rollups.crawl_summary_compute()
    assert (data["links"], data["pages"]) == (4_000_000, 150_000)
    assert (crawl_selectors.crawl_summary()["links"], crawl_selectors.crawl_summary()["pages"]) == (0, 0)


def test_a_dead_link_refresh_that_changes_nothing_keeps_the_site_sums(site, monkeypatch):
    from reports import services as link_reports

    monkeypatch.setattr(link_reports, "COMMIT_WINDOW", timedelta(0))  # every row committed at once here
    summed = []
    real = rollups.link_break_sites
    monkeypatch.setattr(rollups, "link_break_sites", lambda **kw: summed.append(kw) or real(**kw))
    rollups.dead_links_refresh()  # the first: a full recompute
    sites = Snapshot.objects.get(name=rollups.DEAD_LINKS).data["sites"]
    assert [(s["links"], s["dead"]) for s in sites] == [(2, 1)]
    again = rollups.dead_links_refresh()  # no URL moved, no link came: the sums over every open break are kept
    assert (again["urls"], again["changed"], again["removed"], len(summed)) == (0, 0, 0, 1)
    assert Snapshot.objects.get(name=rollups.DEAD_LINKS).data["sites"] == sites
    _, ins = site
    ok = ins["http://a.example/ok"]
    assert url_transition(url_id=ok, expected=State.VISITED, event=Event.NO_RESPONSE, agent=Agent.ACTIVE_SCAN,
                          owner=None, failure_kind="refused")  # fmt: skip
    moved = rollups.dead_links_refresh()
    assert (moved["changed"], len(summed)) == (1, 2)
    assert [s["links"] for s in Snapshot.objects.get(name=rollups.DEAD_LINKS).data["sites"]] == [3]
