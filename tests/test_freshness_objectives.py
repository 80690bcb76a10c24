"""Freshness objectives: the one service that checks and writes them, and the selector of their status."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import FreshnessHour, FreshnessObjective, Job, LastmodTally, Page, Server, Url, UrlEvent
from crawlcore.selectors_freshness import objective_pages, objective_status
from crawlcore.services.freshness import FreshnessError, freshness_delete, freshness_record, freshness_save
from crawlcore.services.urls import NewUrl, urls_insert

pytestmark = pytest.mark.django_db


def site(host: str = "a.example", pages: int = 5, *, checked_ago: float = 3600.0) -> dict[str, int]:
    now = timezone.now()
    ids = urls_insert(urls=[NewUrl(f"http://{host}/p{k}", depth=0) for k in range(pages)]).ids
    Url.objects.filter(id__in=ids.values()).update(
        state="visited", last_checked_at=now - timedelta(seconds=checked_ago)
    )
    for url_id in ids.values():
        Page.objects.create(url_id=url_id, body_z=b"", checksum="c", fetched_at=now)
    return ids


def test_create_change_unchanged_delete():
    site()
    spec = {"name": "a-fresh", "site": "http://a.example", "pages": "all", "target": 86400, "budget": 500}
    assert freshness_save(spec=spec) == ("created", [])
    assert freshness_save(spec=spec) == ("unchanged", [])
    assert freshness_save(spec={**spec, "site": "http://A.example:80/"})[0] == "unchanged"
    outcome, changes = freshness_save(spec={**spec, "target": 3600})
    assert outcome == "changed" and changes == ["target: 86400 -> 3600"]
    assert FreshnessObjective.objects.get(name="a-fresh").target == 3600
    assert freshness_delete(name="a-fresh") and not FreshnessObjective.objects.exists()


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        ({"site": "http://nowhere.example"}, "site", "no such server"),
        ({"site": "ftp://a.example"}, "site", "not an http(s) origin"),
        ({"job": "nope", "site": None}, "job", "no such job"),
        ({"site": None}, "site", "one site"),
        ({"job": "j"}, "site", "one site"),
        ({"pages": "top:0"}, "pages", "whole number"),
        ({"pages": "(["}, "pages", "not a regular expression"),
        ({"target": 0}, "target", "from 1"),
        ({"target": "1d"}, "target", "whole number"),
        ({"budget": True}, "budget", "whole number"),
        ({"colour": "red"}, "colour", "unknown key"),
    ],
)
def test_a_bad_spec_is_one_line_a_key_and_nothing_written(spec, key, message):
    site()
    Job.objects.create(name="j", seeds=["http://a.example/"])
    base = {"name": "o", "site": "http://a.example", "pages": "all", "target": 3600, "budget": 100}
    with pytest.raises(FreshnessError) as info:
        freshness_save(spec={**base, **spec})
    assert message in info.value.problems[key] and "\n" not in str(info.value)
    assert not FreshnessObjective.objects.exists()


def test_a_job_objective_covers_the_jobs_pages():
    from crawlcore.models import JobUrl

    ids = site()
    job = Job.objects.create(name="j", seeds=["http://a.example/"])
    JobUrl.objects.create(job=job, url_id=ids["http://a.example/p1"], depth=0)
    freshness_save(spec={"name": "o", "job": "j", "pages": "all", "target": 60, "budget": 10})
    obj = FreshnessObjective.objects.get(name="o")
    assert [r["id"] for r in objective_pages(obj)] == [ids["http://a.example/p1"]]


def test_pages_top_n_and_regex():
    ids = site(pages=6)
    freshness_save(spec={"name": "o", "site": "http://a.example", "pages": "top:2", "target": 60, "budget": 10})
    obj = FreshnessObjective.objects.get(name="o")
    assert len(objective_pages(obj)) == 2
    obj.pages = r"^/p[34]$"
    assert sorted(r["id"] for r in objective_pages(obj)) == sorted(
        [ids["http://a.example/p3"], ids["http://a.example/p4"]]
    )


def _changes(url_id: int, *, checks: int, changed: int, every: float) -> None:
    now = timezone.now()
    start = now - timedelta(seconds=every * (checks + 1))
    UrlEvent.objects.create(url_id=url_id, from_state="init", to_state="visited", agent="load", at=start)
    for k in range(checks):
        to = "init" if k < changed else "visited"
        at = start + timedelta(seconds=every * (k + 1))
        UrlEvent.objects.create(url_id=url_id, from_state="visited", to_state=to, agent="active_scan", at=at)
    Url.objects.filter(id=url_id).update(last_checked_at=start + timedelta(seconds=every * checks))


def test_status_reports_staleness_target_budget_and_honesty():
    ids = site(pages=4, checked_ago=7200)
    for url_id in ids.values():  # every check found a change: pages changing about every 10 minutes or faster
        _changes(url_id, checks=10, changed=10, every=600)
    Url.objects.filter(id__in=ids.values()).update(last_checked_at=timezone.now() - timedelta(hours=2))
    freshness_save(spec={"name": "o", "site": "http://a.example", "pages": "all", "target": 600, "budget": 10})
    obj = FreshnessObjective.objects.get(name="o")
    status = objective_status(obj)
    assert status["p95_staleness_s"] > 600 and status["met"] is False
    assert status["budget_needed"] > 10 and status["attainable"] is False
    assert status["lastmod_honesty"] is None
    LastmodTally.objects.create(server_id=obj.site_id, announced=10, confirmed=1, found=1, foretold=1)
    assert objective_status(obj)["lastmod_honesty"] == pytest.approx(0.1)
    obj.target, obj.budget = 86_400, 100_000
    status = objective_status(obj)
    assert status["met"] is True and status["attainable"] is True


def test_record_writes_one_row_an_hour_and_the_share_of_hours_met():
    site(pages=2, checked_ago=10)
    freshness_save(spec={"name": "o", "site": "http://a.example", "pages": "all", "target": 3600, "budget": 100})
    now = timezone.now()
    assert freshness_record(now=now) == 1
    assert freshness_record(now=now) == 1
    assert FreshnessHour.objects.count() == 1
    obj = FreshnessObjective.objects.get()
    FreshnessHour.objects.create(objective=obj, hour=now - timedelta(hours=3), met=False)
    assert objective_status(obj, now=now)["hours_met_pct"] == 50.0


def test_a_servers_reload_lag_is_read_from_its_checks_and_the_reloads_after_them(settings):
    from crawlcore.selectors_freshness import page_states, servers_reload_lag

    ids = list(site(pages=3).values())
    other = list(site("b.example", pages=1).values())
    now = timezone.now()
    for k, url_id in enumerate(ids):  # each found changed, reloaded 10 s, 20 s and 30 s later
        found = now - timedelta(minutes=10 + k)
        UrlEvent.objects.create(url_id=url_id, from_state="visited", to_state="init", agent="active_scan", at=found)
        UrlEvent.objects.create(url_id=url_id, from_state="init", to_state="visited", agent="load",
                                at=found + timedelta(seconds=10 * (k + 1)))  # fmt: skip
    # A change found and not reloaded yet, and one found long ago: neither counts.
    UrlEvent.objects.create(url_id=other[0], from_state="visited", to_state="init", agent="active_scan", at=now)
    old = now - timedelta(days=2)
    UrlEvent.objects.create(url_id=ids[0], from_state="visited", to_state="init", agent="active_scan", at=old)
    UrlEvent.objects.create(url_id=ids[0], from_state="init", to_state="visited", agent="load",
                            at=old + timedelta(hours=1))  # fmt: skip
    server = Url.objects.get(id=ids[0]).server_id
    lags = servers_reload_lag(ids + other, now=now)
    assert lags == {server: pytest.approx(29.0)}  # the p95 of 10, 20 and 30 s
    rows = list(Url.objects.filter(id__in=ids).values("id", "server_id", "last_checked_at", "state"))
    # A check's reload comes that long after the check, and the check up to a sweep's period after it is due.
    wait = settings.CRAWL_STALENESS_PERIOD + 29.0
    assert [s.lag for s in page_states(rows, now=now)] == [pytest.approx(wait)] * 3


def test_an_honest_sitemap_read_after_the_check_vouches_for_the_pages_it_says_unchanged():
    from crawlcore.selectors_freshness import page_states

    ids = list(site(pages=3, checked_ago=600).values())
    now = timezone.now()
    checked = Url.objects.get(id=ids[0]).last_checked_at
    Url.objects.filter(id=ids[0]).update(sitemap_lastmod=checked - timedelta(hours=1))  # unchanged since the check
    Url.objects.filter(id=ids[1]).update(sitemap_lastmod=checked + timedelta(minutes=5))  # says it changed
    server = Url.objects.get(id=ids[0]).server_id  # ids[2]: not in the sitemap
    Server.objects.filter(id=server).update(sitemaps_read_at=now - timedelta(minutes=1))

    def since() -> list[int]:
        rows = list(Url.objects.filter(id__in=ids).order_by("id").values(
            "id", "server_id", "last_checked_at", "state", "sitemap_lastmod"))  # fmt: skip
        return [round(s.since_current) for s in page_states(rows, now=now)]

    assert since() == [60, 600, 600]
    # A server whose lastmod proved dishonest vouches for nothing.
    LastmodTally.objects.create(server_id=server, announced=10, confirmed=1, found=5, foretold=5)
    assert since() == [600, 600, 600]


def test_a_page_found_changed_was_stale_since_a_change_in_its_last_interval():
    """A check found the page changed 10 s ago, 60 s after a check found it current: the change came within
    those 60 s, whatever the page's older checks' spacing (600 s here), so its known staleness is the 10 s
    since plus the Poisson expectation over that interval, not over the mean one."""
    from crawlcore.selectors_freshness import page_states
    from scheduling import freshness as fr

    url_id = next(iter(site(pages=1).values()))
    _changes(url_id, checks=4, changed=0, every=600)
    now = timezone.now()
    UrlEvent.objects.create(url_id=url_id, from_state="visited", to_state="visited", agent="active_scan",
                            at=now - timedelta(seconds=70))  # fmt: skip
    UrlEvent.objects.create(url_id=url_id, from_state="visited", to_state="init", agent="active_scan",
                            at=now - timedelta(seconds=10))  # fmt: skip
    Url.objects.filter(id=url_id).update(state="init", last_checked_at=now - timedelta(seconds=10))
    rows = list(Url.objects.filter(id=url_id).values("id", "server_id", "last_checked_at", "state"))
    [state] = page_states(rows, now=now)
    assert state.known_stale == pytest.approx(10 + fr.staleness_at_detection(state.rate, 60), abs=0.01)
    assert 10 < state.known_stale < 70
