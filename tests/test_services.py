"""The data layer's guarantees, step by step, on SQLite (the cluster tests repeat them on PostgreSQL)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from crawlcore.models import Page, Server, ServerLease, StatusCheck, Url, UrlEvent
from crawlcore.services import load_group, pages
from crawlcore.services import visit as visit_module
from crawlcore.services.extract import pages_extract
from crawlcore.services.load import LoadBatch, load_server_batch
from crawlcore.services.load_dispatch import dispatch_due, reconcile
from crawlcore.services.servers import server_claim
from crawlcore.services.urls import (
    Move,
    NewUrl,
    url_transition,
    urls_claim,
    urls_insert,
    urls_known,
    urls_transition,
)
from crawler.lifecycle import Agent, Event, State
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db


def _insert(*urls: str, trusted: bool = False) -> dict[str, int]:
    return urls_insert(urls=[NewUrl(u, depth=0) for u in urls], trusted=trusted).ids


def test_insert_is_idempotent_and_groups_by_server():
    first = _insert("http://a.example/x", "http://a.example/y", "http://b.example:8080/")
    again = _insert("http://a.example/x", "http://b.example:8080/")
    assert Url.objects.count() == 3 and Server.objects.count() == 2
    assert again["http://a.example/x"] == first["http://a.example/x"]


def test_insert_takes_the_callers_lookup_and_looks_up_nothing_again():
    """The extract agent looks every target up first and builds candidates only for the URLs not found:
    urls_insert takes that lookup (its ids in the result) and sends no second one."""
    (known_id,) = _insert("http://a.example/known").values()
    looked_up = urls_known(["http://a.example/known", "http://a.example/new"])
    assert looked_up.ids == {"http://a.example/known": known_id}
    with CaptureQueriesContext(connection) as queries:
        inserted = urls_insert(urls=[NewUrl("http://a.example/new", depth=1)], known=looked_up)
    assert set(inserted.ids) == {"http://a.example/known", "http://a.example/new"}
    assert inserted.ids["http://a.example/known"] == known_id
    assert Url.objects.get(id=inserted.ids["http://a.example/new"]).depth == 1
    # The known URL is not looked up again (SQLite, whose insert returns no ids, reads the new one's back).
    known_key = looked_up.hashes["http://a.example/known"]
    assert [q["sql"] for q in queries.captured_queries if known_key in q["sql"] and "SELECT" in q["sql"]] == []
    # All known: nothing to insert, the known ids all the same.
    assert urls_insert(urls=[], known=looked_up).ids == {"http://a.example/known": known_id}


def test_invalid_transition_is_refused_logged_and_not_applied(caplog):
    (pk,) = _insert("http://a.example/").values()
    with caplog.at_level(logging.ERROR):
        moved = url_transition(
            url_id=pk, expected=State.INIT, event=Event.UNCHANGED, agent=Agent.ACTIVE_SCAN, owner=None
        )
    assert moved is False
    assert "refused" in caplog.text and "no transition from init on unchanged" in caplog.text
    assert Url.objects.get(pk=pk).state == "init" and not UrlEvent.objects.exists()


def test_two_agents_racing_on_one_url_cannot_both_win():
    (pk,) = _insert("http://a.example/").values()
    args = dict(url_id=pk, expected=State.INIT, agent=Agent.LOAD, owner=None)
    assert url_transition(event=Event.FETCHED, **args) is True
    assert url_transition(event=Event.NO_RESPONSE, **args) is False  # the redelivered or late one
    assert Url.objects.get(pk=pk).state == "visited"
    assert list(UrlEvent.objects.values_list("from_state", "to_state")) == [("init", "visited")]


def test_transition_requires_the_lease_owner():
    ids = _insert("http://a.example/")
    server_id = Url.objects.get().server_id
    claimed = urls_claim(server_id=server_id, owner="w1", limit=10)
    assert [u.id for u in claimed] == list(ids.values())
    moved = url_transition(url_id=claimed[0].id, expected=State.INIT, event=Event.FETCHED, agent=Agent.LOAD, owner="w2")
    assert moved is False


def test_batched_transition_moves_only_the_urls_still_in_state_and_ours():
    ids = sorted(_insert("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4").values())
    server_id = Url.objects.get(id=ids[0]).server_id
    urls_claim(server_id=server_id, owner="w1", limit=10)
    Url.objects.filter(id=ids[1]).update(lease_owner="w2")  # the reconciler gave it to another worker
    Url.objects.filter(id=ids[2]).update(state="visited")  # another agent got there first
    moves = [Move(ids[0], {"last_status": 200, "checksum": "c0"}, http_status=200, latency_ms=5.0)]
    moves += [Move(i, {"last_status": 200, "checksum": "c"}) for i in ids[1:3]]
    moves += [Move(ids[3], {"last_status": 204}, reason="other columns")]
    moved = urls_transition(moves=moves, expected=State.INIT, event=Event.FETCHED, agent=Agent.LOAD, owner="w1")
    assert moved == [ids[0], ids[3]]
    rows = {u.id: u for u in Url.objects.all()}
    assert (rows[ids[0]].state, rows[ids[0]].checksum, rows[ids[0]].lease_owner) == ("visited", "c0", "")
    assert (rows[ids[3]].state, rows[ids[3]].last_status, rows[ids[3]].checksum) == ("visited", 204, "")
    assert rows[ids[1]].state == "init" and rows[ids[1]].lease_owner == "w2"
    events = list(UrlEvent.objects.order_by("url_id").values_list("url_id", "to_state", "http_status", "latency_ms"))
    assert events == [(ids[0], "visited", 200, 5.0), (ids[3], "visited", None, None)]


def test_claim_is_exclusive_until_the_lease_expires():
    _insert(*(f"http://a.example/{i}" for i in range(5)))
    server_id = Server.objects.get().id
    assert len(urls_claim(server_id=server_id, owner="w1", limit=3)) == 3
    assert len(urls_claim(server_id=server_id, owner="w2", limit=10)) == 2
    later = timezone.now() + timedelta(hours=1)
    assert len(urls_claim(server_id=server_id, owner="w3", limit=10, now=later)) == 5


def test_reconciler_frees_expired_leases_of_dead_workers():
    _insert("http://a.example/1", "http://a.example/2")
    server = Server.objects.get()
    assert server_claim(server_id=server.id, owner="dead-worker") == 0
    urls_claim(server_id=server.id, owner="dead-worker", limit=10)
    assert reconcile().url_leases == 0  # not expired yet: the owner may still be working
    out = reconcile(now=timezone.now() + timedelta(hours=1))
    assert (out.url_leases, out.server_leases) == (2, 1)
    assert not Url.objects.exclude(lease_owner="").exists()


def test_dispatch_sends_a_server_once_until_redispatch_time(monkeypatch):
    sent = []
    monkeypatch.setattr("crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: sent.append(kw))
    _insert("http://a.example/1", "http://b.example/1")
    # One instant for the first two: an hour's start between them would forget the dispatch on purpose
    # (queue_reset_at_hour_boundary), and the second would send both again.
    now = timezone.now()
    assert dispatch_due(now=now) == 2
    assert dispatch_due(now=now) == 0  # already dispatched, message presumably in flight
    assert dispatch_due(now=now + timedelta(hours=1)) == 2  # lost message: send again
    assert {kw["crawler_num"] for kw in sent} == {None}


def test_redelivered_load_message_does_nothing_while_another_holds_the_server():
    _insert("http://a.example/1")
    server = Server.objects.get()
    assert server_claim(server_id=server.id, owner="first") == 0
    assert load_server_batch(server_id=server.id, owner="second") is None
    assert Url.objects.get().state == "init"


def test_a_load_message_that_finds_every_slot_held_leaves_its_server_dispatchable(settings, monkeypatch):
    """A dispatch that raced with another visit's claim finds no slot. Its message is consumed all
    the same: the server must not stay marked queued, or the running visits' continuations skip it too."""
    settings.CRAWL_SERVER_CONCURRENCY = 2
    sent: list[int] = []
    monkeypatch.setattr(
        "crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: sent.append(kw["server_id"])
    )
    _insert("http://a.example/1")
    server = Server.objects.get()
    assert server_claim(server_id=server.id, owner="first", agent="load") == 0
    assert server_claim(server_id=server.id, owner="second", agent="load") == 1
    # A dispatcher saw one slot free just before "second" took it, and marked the server queued after.
    Server.objects.filter(id=server.id).update(dispatched_at=timezone.now())
    assert load_server_batch(server_id=server.id, owner="third") is None  # its message: no slot left
    assert Server.objects.get().dispatched_at is None
    ServerLease.objects.filter(server=server, owner="first").update(owner="", expires_at=None)  # a visit ends
    assert dispatch_due() == 1 and sent == [server.id]  # at once, not after CRAWL_REDISPATCH_AFTER


def test_discovered_loopback_server_is_excluded_without_a_request(settings):
    settings.CRAWL_ALLOW_PRIVATE = ()
    with TestWebServer(SiteSpec(n_servers=1, first_octet=190, silent_server=False, slow_server=False)) as web:
        _insert(web.seeds()[0])  # as the extract agent would: not trusted
        server = Server.objects.get()
        outcome = load_server_batch(server_id=server.id, owner="w")
        assert outcome is not None and outcome.server_excluded.startswith("private address")
        assert web.access_log() == []
    url = Url.objects.get()
    assert url.exclusion_reason.startswith("private address") and url.next_check_at is None
    assert not StatusCheck.objects.exists()


def test_operator_seed_on_loopback_is_trusted(settings):
    settings.CRAWL_ALLOW_PRIVATE = ()
    settings.CRAWL_DEFAULT_DELAY = 0
    with TestWebServer(SiteSpec(n_servers=1, first_octet=191, silent_server=False, slow_server=False)) as web:
        _insert(web.seeds()[0], trusted=True)
        outcome = load_server_batch(server_id=Server.objects.get().id, owner="w")
        assert outcome is not None and outcome.fetched == 1
        # After the batch, its sitemaps: none listed in robots.txt, so /sitemap.xml (a 404 here).
        assert [r.path for r in web.access_log()] == ["/robots.txt", "/", "/sitemap.xml"]
    assert Url.objects.get().state == "visited"


def _load_all(server_id: int) -> None:
    for _ in range(10):  # bounded: each batch takes up to CRAWL_BATCH_SIZE URLs
        outcome = load_server_batch(server_id=server_id, owner="w")
        if outcome is None or (outcome.fetched + outcome.failed + outcome.excluded) == 0:
            return


@pytest.mark.parametrize("merge", [True, False])
def test_two_names_for_one_site_are_merged_by_ip_and_home_page(settings, merge):
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_MERGE_HOSTS = merge
    spec = SiteSpec(n_servers=1, first_octet=1, silent_server=False, slow_server=False)
    with TestWebServer(spec) as web:
        by_ip = f"http://127.0.0.1:{web.port}/"
        by_name = f"http://localhost:{web.port}/"
        _insert(by_ip, trusted=True)
        _load_all(Server.objects.get(host="127.0.0.1").id)
        _insert(by_name, f"{by_name}p/1.html", trusted=True)
        _load_all(Server.objects.get(host="localhost").id)
        fetched_by_name = [r for r in web.access_log() if r.path == "/p/1.html"]
    alias = Server.objects.get(host="localhost")
    if merge:
        assert alias.alias_of == Server.objects.get(host="127.0.0.1")
        assert Url.objects.get(url=f"{by_name}p/1.html").exclusion_reason == f"alias of http://127.0.0.1:{web.port}"
        assert fetched_by_name == []
    else:
        assert alias.alias_of is None and len(fetched_by_name) == 1


def _page_with_links(url: str, links: list[str], *, scope_mode: str) -> Page:
    import zlib

    from crawler.scope import Scope
    from crawler.urlnorm import server_key

    scope = Scope.for_seed(scope_mode, server_key(url).host)
    (pk,) = urls_insert(urls=[NewUrl(url, depth=0, scope=scope)]).ids.values()
    html = "".join(f'<a href="{link}">x</a>' for link in links).encode()
    return Page.objects.create(url_id=pk, body_z=zlib.compress(html), checksum="c", fetched_at=timezone.now())


@pytest.mark.parametrize(
    ("mode", "followed"),
    [
        ("host", {"http://www.example.com/a"}),
        ("domain", {"http://www.example.com/a", "http://news.example.com/b"}),
        ("any", {"http://www.example.com/a", "http://news.example.com/b", "http://other.org/c"}),
    ],
)
def test_scope_decides_which_links_are_crawled(settings, monkeypatch, mode, followed):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    settings.CRAWL_OFFSITE_DEPTH = 1
    links = ["http://www.example.com/a", "http://news.example.com/b", "http://other.org/c"]
    page = _page_with_links("http://www.example.com/", links, scope_mode=mode)
    pages_extract(page_ids=[page.id])
    rows = {u.url: u for u in Url.objects.filter(url__in=links)}
    assert set(rows) == set(links)  # all stored: the link graph is whole
    assert {u for u, r in rows.items() if not r.exclusion_reason} == followed
    assert {r.exclusion_reason for u, r in rows.items() if u not in followed} <= {"out of scope"}


def test_offsite_depth_is_counted_from_the_seed_domain(settings, monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    settings.CRAWL_OFFSITE_DEPTH = 1
    page = _page_with_links("http://www.example.com/", ["http://other.org/"], scope_mode="any")
    pages_extract(page_ids=[page.id])
    offsite = Url.objects.get(url="http://other.org/")
    assert (offsite.offsite_hops, offsite.exclusion_reason) == (1, "")
    import zlib

    second = Page.objects.create(
        url=offsite, body_z=zlib.compress(b'<a href="http://third.net/">x</a>'), checksum="d", fetched_at=timezone.now()
    )
    pages_extract(page_ids=[second.id])
    assert Url.objects.get(url="http://third.net/").exclusion_reason == "out of scope"


def test_identical_content_is_marked_duplicate_of_the_first_page(monkeypatch):
    """Session-id URLs: three addresses, one body. The first page stays the original."""
    import zlib

    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    ids = _insert(*(f"http://a.example/page?sid={n}" for n in range(3)), "http://a.example/other")
    body = zlib.compress(b"<title>same</title>")
    pages = [
        Page.objects.create(url_id=ids[u], body_z=body, checksum="same", fetched_at=timezone.now())
        for u in sorted(ids)
        if "sid" in u
    ]
    other = Page.objects.create(
        url_id=ids["http://a.example/other"], body_z=body, checksum="different", fetched_at=timezone.now()
    )
    pages_extract(page_ids=[p.id for p in pages] + [other.id])
    marks = dict(Page.objects.values_list("id", "duplicate_of_id"))
    assert marks[pages[0].id] is None
    assert marks[pages[1].id] == marks[pages[2].id] == pages[0].id
    assert marks[other.id] is None


def test_a_url_that_breaks_the_load_agent_waits_a_lease_period(settings, monkeypatch):
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.0/8",)

    def broken(self, url, result):
        raise RuntimeError("poison")

    monkeypatch.setattr(LoadBatch, "fetch_one", broken)
    with TestWebServer(SiteSpec(n_servers=1, first_octet=192, silent_server=False, slow_server=False)) as web:
        _insert(web.seeds()[0], trusted=True)
        with pytest.raises(RuntimeError):
            load_server_batch(server_id=Server.objects.get().id, owner="w")
    url = Url.objects.get()
    assert url.state == "init" and url.lease_owner == ""
    assert url.next_check_at > timezone.now() + timedelta(seconds=settings.CRAWL_LEASE_SECONDS - 30)


def test_load_batch_sends_its_server_again_while_it_has_due_urls(settings, monkeypatch):
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_BATCH_SIZE = 1
    monkeypatch.setattr(LoadBatch, "another_round", lambda self, took: False)  # as when the budget is spent
    sent: list[int] = []
    monkeypatch.setattr(
        "crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: sent.append(kw["server_id"])
    )
    with TestWebServer(SiteSpec(n_servers=1, first_octet=193, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        _insert(seed, trusted=True)
        _insert(seed + "missing-1.html", trusted=True)  # after it: one insert names its URLs in hash order
        server_id = Server.objects.get().id
        assert load_server_batch(server_id=server_id, owner="w").fetched == 1
        assert sent == [server_id]  # one Init URL left: the chain goes on
        Server.objects.filter(id=server_id).update(dispatched_at=None)
        load_server_batch(server_id=server_id, owner="w")
        assert sent == [server_id]  # nothing due any more: the chain ends


def test_load_visit_takes_its_servers_next_batches_within_its_budget(settings, monkeypatch):
    """The robot stays on its server: after a full batch the visit claims the next one itself (one
    slot taken, no message), until nothing is due; a paused server gets no further batch and no message."""
    settings.CRAWL_DEFAULT_DELAY = 0
    settings.CRAWL_BATCH_SIZE = 1
    sent: list[int] = []
    monkeypatch.setattr(
        "crawlcore.services.load_dispatch.enqueue_load_on_commit", lambda **kw: sent.append(kw["server_id"])
    )
    claims: list[int] = []
    real_claim = visit_module.server_claim
    monkeypatch.setattr(visit_module, "server_claim", lambda **kw: claims.append(kw["server_id"]) or real_claim(**kw))
    with TestWebServer(SiteSpec(n_servers=1, first_octet=194, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        _insert(seed, seed + "missing-1.html", seed + "missing-2.html", trusted=True)
        server_id = Server.objects.get().id
        outcome = load_server_batch(server_id=server_id, owner="w")
        assert (outcome.fetched, outcome.failed) == (1, 2)  # three batches of one URL, in one visit
        assert claims == [server_id] and sent == []  # nothing due after them: no continuation message
        assert not Url.objects.filter(state="init").exists()

        _insert(seed + "missing-3.html", seed + "missing-4.html", trusted=True)
        Server.objects.filter(id=server_id).update(paused_until=timezone.now() + timedelta(hours=1))
        outcome = load_server_batch(server_id=server_id, owner="w")
        assert outcome.failed == 1 and sent == []  # paused after its batch: the robot leaves it
        assert Url.objects.filter(state="init", lease_owner="").count() == 1


def test_a_response_the_database_refuses_is_classified_and_its_group_is_kept(settings, monkeypatch, caplog):
    """What the fetcher's cleaning lets through and the database still refuses (here an integer
    beyond SQLite's, and a page write that fails) moves only that URL forward, as bad_response on the
    NoResponse back-off, logged; the other pages of its group are stored."""
    settings.CRAWL_DEFAULT_DELAY = 0
    real_fetch_one = LoadBatch.fetch_one

    def poison_status(self, url, result):
        if url.url.endswith("/missing.html"):
            result.status = 10**20  # beyond a 64-bit integer column
        return real_fetch_one(self, url, result)

    real_row = pages.page_row

    def refuse_page_2(url_id, result, checksum, *, now):
        if url_id == poisoned_id:
            raise ValueError("A string literal cannot contain NUL (0x00) characters.")
        return real_row(url_id, result, checksum, now=now)

    monkeypatch.setattr(LoadBatch, "fetch_one", poison_status)
    monkeypatch.setattr(load_group, "page_row", refuse_page_2)  # the group's one statement
    monkeypatch.setattr(pages, "page_row", refuse_page_2)  # then the page written alone
    with TestWebServer(SiteSpec(n_servers=1, first_octet=194, silent_server=False, slow_server=False)) as web:
        seed = web.seeds()[0]
        ids = _insert(seed, *(f"{seed}p/{k}.html" for k in range(3)), seed + "missing.html", trusted=True)
        poisoned_id = ids[f"{seed}p/2.html"]
        with caplog.at_level(logging.WARNING, logger="crawlcore.services.load"):
            load_server_batch(server_id=Server.objects.get().id, owner="w")
    rows = {u.url: u for u in Url.objects.all()}
    for url in (f"{seed}p/2.html", seed + "missing.html"):
        row = rows[url]
        assert row.state == "noresponse1" and row.failure_kind == "bad_response", (url, row.state, row.failure_kind)
        assert row.next_check_at > timezone.now() + timedelta(seconds=settings.CRAWL_NR1_BACKOFF - 60)
        assert row.lease_owner == ""
    for url in (seed, f"{seed}p/0.html", f"{seed}p/1.html"):
        assert rows[url].state == "visited", url
    assert Page.objects.filter(url_id=poisoned_id).count() == 0
    assert sum("bad_response" in r.getMessage() for r in caplog.records) == 2
    assert not StatusCheck.objects.filter(category="pending").exists()
