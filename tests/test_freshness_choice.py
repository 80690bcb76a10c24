"""The active scan's choice under freshness objectives: pages due for their objective first (before the revisit
floor), no server more requests a day than its budget, a server whose lastmod proved dishonest no longer has
pages made due by it, and the honesty tally the active scan keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import LastmodTally, Server, StatusCheck, Url
from crawlcore.selectors_freshness import servers_lastmod_untrusted
from crawlcore.services.freshness import freshness_save, lastmod_tally_add
from crawlcore.services.freshness_choice import budget_left
from crawlcore.services.sweep import active_candidates
from tests.test_freshness_objectives import _changes, site
from tests.test_scan import sent, web  # noqa: F401 - the scan tests' fixtures

pytestmark = pytest.mark.django_db


def _objective(host: str, *, target: int, budget: int) -> None:
    freshness_save(spec={"name": host, "site": f"http://{host}", "pages": "all", "target": target, "budget": budget})


def _requests(host: str, n: int, *, hours_ago: float = 2.0) -> None:
    server = Server.objects.get(host=host)
    now = timezone.now()
    StatusCheck.objects.bulk_create(
        StatusCheck(
            server=server,
            requested_url=f"http://{host}/",
            checked_at=now - timedelta(hours=hours_ago, minutes=k + 1),
            latency_ms=5.0,
            category="normal",
            agent="load",
        )  # fmt: skip
        for k in range(n)
    )


def _fast_pages(host: str, pages: int, *, checked_ago: float) -> dict[str, int]:
    ids = site(host, pages=pages)
    for url_id in ids.values():
        _changes(url_id, checks=10, changed=10, every=300)  # changes about every 5 minutes or faster
    Url.objects.filter(id__in=ids.values()).update(last_checked_at=timezone.now() - timedelta(seconds=checked_ago))
    return ids


def test_objective_pages_are_due_by_their_target_before_the_revisit_floor(settings):
    settings.CRAWL_REVISIT_AFTER = 3600
    ids = _fast_pages("a.example", 3, checked_ago=900)  # 15 minutes: inside the floor, past a 5-minute target
    other = _fast_pages("b.example", 3, checked_ago=900)
    assert active_candidates(now=timezone.now(), limit=10) == []  # no objective: the floor holds
    _objective("a.example", target=300, budget=1000)
    chosen = active_candidates(now=timezone.now(), limit=10)
    assert sorted(chosen) == sorted(ids.values())
    assert not set(chosen) & set(other.values())


def test_no_server_takes_more_requests_a_day_than_its_budget(settings):
    settings.CRAWL_REVISIT_AFTER = 0
    ids = _fast_pages("a.example", 10, checked_ago=3600)
    _fast_pages("b.example", 3, checked_ago=3600)
    _objective("a.example", target=60, budget=240)  # 10 an hour
    _requests("a.example", 232)  # earlier today
    now = timezone.now()
    # 240 − 232 used = 8 left: a check costs up to 2 (the reload it may cause), so at most 4 checks.
    assert budget_left(now=now)[Server.objects.get(host="a.example").id] == 8
    chosen = active_candidates(now=now, limit=100)
    mine = [i for i in chosen if i in set(ids.values())]
    assert 1 <= len(mine) <= 4
    assert len(chosen) - len(mine) == 3  # the server without an objective is not held back
    _requests("a.example", 7)  # 239 used: one request left, not enough for a check and its reload
    assert not set(active_candidates(now=now, limit=100)) & set(ids.values())


def test_a_days_budget_is_spent_evenly_a_24th_an_hour(settings):
    settings.CRAWL_REVISIT_AFTER = 0
    ids = _fast_pages("a.example", 10, checked_ago=3600)
    _objective("a.example", target=60, budget=240)  # 10 an hour
    _requests("a.example", 4, hours_ago=0)  # this hour
    server = Server.objects.get(host="a.example").id
    now = timezone.now()
    assert budget_left(now=now)[server] == 6  # the hour's 10 less 4, though the day has 236 left
    assert 1 <= len(set(active_candidates(now=now, limit=100)) & set(ids.values())) <= 3
    _requests("a.example", 5, hours_ago=0)
    assert budget_left(now=now)[server] == 1
    assert not set(active_candidates(now=now, limit=100)) & set(ids.values())


def test_a_dishonest_servers_lastmod_no_longer_makes_pages_due(settings):
    settings.CRAWL_REVISIT_AFTER = 3600
    ids = site("liar.example", pages=2, checked_ago=600)
    now = timezone.now()
    Url.objects.filter(id__in=ids.values()).update(sitemap_lastmod=now - timedelta(seconds=10), in_sitemap=True)
    assert sorted(active_candidates(now=now, limit=10)) == sorted(ids.values())
    server = Server.objects.get(host="liar.example")
    for _ in range(20):  # announced a change at every check; one in ten was real
        lastmod_tally_add(server_id=server.id, announced=True, changed=False)
    lastmod_tally_add(server_id=server.id, announced=True, changed=True)
    lastmod_tally_add(server_id=server.id, announced=True, changed=True)
    tally = LastmodTally.objects.get(server=server)
    assert (tally.announced, tally.confirmed, tally.found, tally.foretold) == (22, 2, 2, 2)
    assert servers_lastmod_untrusted() == [server.id]
    assert active_candidates(now=now, limit=10) == []


def test_a_change_lastmod_did_not_announce_counts_only_when_the_sitemap_was_read_since():
    site("quiet.example", pages=1)
    server = Server.objects.get(host="quiet.example")
    lastmod_tally_add(server_id=server.id, announced=False, changed=True, could_foretell=False)
    assert not LastmodTally.objects.exists()
    lastmod_tally_add(server_id=server.id, announced=False, changed=True)
    assert LastmodTally.objects.get(server=server).found == 1


def test_the_active_scan_tallies_what_lastmod_said_against_what_it_found(sent, web):  # noqa: F811 (test_scan's)
    from tests.test_scan import ACTIVE, _loaded, _scan
    from testweb.scan import Resource

    res = Resource(etag='"v1"')
    url = _loaded(web, "/p.html", res)
    server = Server.objects.get(id=url.server_id)
    # The sitemap (read after the load) says the page changed; it did not: an announcement not confirmed.
    Server.objects.filter(id=server.id).update(sitemaps_read_at=timezone.now())
    Url.objects.filter(id=url.id).update(sitemap_lastmod=timezone.now())
    _scan(sent, ACTIVE)
    tally = LastmodTally.objects.get(server=server)
    assert (tally.announced, tally.confirmed, tally.found, tally.foretold) == (1, 0, 0, 0)
    # A real change the sitemap (read since the last check) did not announce: found, not foretold.
    res.etag = '"v2"'
    Server.objects.filter(id=server.id).update(sitemaps_read_at=timezone.now())
    _scan(sent, ACTIVE)
    tally.refresh_from_db()
    assert (tally.announced, tally.confirmed, tally.found, tally.foretold) == (1, 0, 1, 0)


def test_a_tight_objective_does_not_take_every_check_of_a_period(settings):
    settings.CRAWL_REVISIT_AFTER = 3600
    tight = _fast_pages("a.example", 6, checked_ago=900)
    loose = _fast_pages("b.example", 6, checked_ago=900)
    _objective("a.example", target=5, budget=100_000)  # always far overdue
    _objective("b.example", target=300, budget=100_000)
    chosen = active_candidates(now=timezone.now(), limit=4)
    assert len(set(chosen) & set(tight.values())) == 2 and len(set(chosen) & set(loose.values())) == 2
