"""Seed 003 in the ranking and the analyzer: duplicate pages merged for ranking, left out of the
analyzer's tables; `rank --method blockrank-local` (local rank x block rank, no global iteration) beside
exact PageRank."""

from __future__ import annotations

import io
import json

import networkx as nx
import numpy as np
import pytest
from django.core.management import call_command

from analyzer.selectors import analysis_report
from analyzer.services import pages_analyse, pages_pending
from crawlcore.models import Link, Page, Server, Url
from crawler.urlnorm import url_hash
from ranking.blockrank import blockrank_local
from ranking.convert import Site, convert, merge_duplicates
from ranking.models import PageRank, RankRun
from ranking.pagerank import build_graph
from ranking.services import rank_crawl

from .test_analyzer_report import EN, KO, add_page, html

# -- converting: duplicates merged ------------------------------------------------------------------------


def test_merge_follows_chains_and_ignores_marks_to_later_or_unknown_urls():
    ids = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
    # 3 copies 2 which copies 1; 5 -> 9 (unknown); 4 -> 6 (a later URL: not how marks are made)
    canonical = merge_duplicates(ids, np.array([2, 3, 5, 4]), np.array([1, 2, 9, 6]))
    assert canonical.tolist() == [1, 1, 1, 4, 5, 6]


def test_links_of_a_copy_count_once_and_links_between_copies_are_dropped():
    sites = [Site(1, "a.example")]
    # URL 10 is /, 11 is /index.html (a copy of 10), 12 and 13 other pages.
    links = [(10, 11), (10, 12), (11, 12), (11, 13), (12, 11), (13, 10)]
    c = convert(
        sites, np.array([10, 11, 12, 13]), np.array([1, 1, 1, 1]),
        np.array([a for a, _ in links]), np.array([b for _, b in links]),
        duplicates=(np.array([11]), np.array([10])),
    )
    assert c.url_ids.tolist() == [10, 12, 13] and c.merged_urls.tolist() == [11]
    pairs = {(int(c.url_ids[s]), int(c.url_ids[d])) for s, d in zip(c.src, c.dst, strict=True)}
    assert pairs == {(10, 12), (10, 13), (12, 10), (13, 10)}
    assert c.merged_links == 2  # 10->11 (a page to its own copy) and 11->12 (already counted from 10)


def test_without_duplicates_convert_keeps_every_url_and_link():
    c = convert([Site(1, "a.example")], np.array([3, 1, 2]), np.array([1, 1, 1]), np.array([1, 2]), np.array([2, 3]))
    assert c.url_ids.tolist() == [1, 2, 3] and c.merged_links == 0
    assert list(zip(c.src.tolist(), c.dst.tolist(), strict=True)) == [(0, 1), (1, 2)]


# -- blockrank-local ---------------------------------------------------------------------------------------


def _web_like(seed: int, sites: int = 8, per_site: int = 40):
    rng = np.random.default_rng(seed)
    n = sites * per_site
    block = np.repeat(np.arange(sites), per_site)
    src, dst = [], []
    for i in range(n):
        for _ in range(5):
            j = rng.integers(n) if rng.random() < 0.2 else block[i] * per_site + rng.integers(per_site)
            if j != i:
                src.append(i)
                dst.append(int(j))
    return build_graph(np.array(src), np.array(dst), n), block


def test_local_times_block_rank_approximates_pagerank_without_a_global_phase():
    graph, block = _web_like(3)
    local = blockrank_local(graph, block, tol=1e-12, local_tol=1e-12)
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist(), strict=True))
    pr = nx.pagerank(g, tol=1e-14, max_iter=10_000)
    exact = np.array([pr[i] for i in range(graph.n)])
    assert local.ranks.sum() == pytest.approx(1.0)
    # The product is each page's share of its block times the block's share: per block it sums to the block rank.
    assert np.bincount(block, weights=local.ranks) == pytest.approx(local.block_ranks)
    l1 = float(np.abs(local.ranks - exact).sum())
    uniform = float(np.abs(np.full(graph.n, 1 / graph.n) - exact).sum())
    assert 0 < l1 < uniform  # an approximation, and a better one than knowing nothing


def test_with_one_block_local_rank_is_pagerank():
    graph, _ = _web_like(5, sites=1, per_site=60)
    local = blockrank_local(graph, np.zeros(graph.n, dtype=np.int64), tol=1e-13, local_tol=1e-13)
    g = nx.DiGraph(list(zip(graph.src.tolist(), graph.dst.tolist(), strict=True)))
    exact = nx.pagerank(g, tol=1e-14, max_iter=10_000)
    assert local.ranks == pytest.approx(np.array([exact[i] for i in range(graph.n)]), abs=1e-9)


# -- the crawl's ranking and the analyzer on SQLite ----------------------------------------------------------


def _crawl_with_a_copy():
    """Two sites; a.example's / is also served at /index.html (a copy marked by the extract agent)."""
    for host, pages in (("a.example", ["/", "/index.html", "/x", "/y"]), ("b.example", ["/", "/z"])):
        server = Server.objects.create(scheme="http", host=host, port=80)
        for path in pages:
            url = f"http://{host}{path}"
            Url.objects.create(url=url, url_hash=url_hash(url), server=server)
    ids = dict(Url.objects.values_list("url", "id"))
    links = [
        ("http://a.example/", "http://a.example/x"), ("http://a.example/", "http://b.example/"),
        ("http://a.example/index.html", "http://a.example/x"), ("http://a.example/index.html", "http://b.example/"),
        ("http://a.example/x", "http://a.example/index.html"), ("http://a.example/y", "http://a.example/"),
        ("http://b.example/", "http://b.example/z"), ("http://b.example/z", "http://a.example/y"),
    ]
    Link.objects.bulk_create([Link(from_url_id=ids[a], to_url_id=ids[b]) for a, b in links])
    first = Page.objects.create(url_id=ids["http://a.example/"], checksum="c1", fetched_at="2026-01-01T00:00Z")
    Page.objects.create(url_id=ids["http://a.example/index.html"], checksum="c1", fetched_at="2026-01-01T00:00Z",
                        duplicate_of=first)
    return ids


def _expected_ranks(ids) -> dict[int, float]:
    merged = {
        ("http://a.example/", "http://a.example/x"), ("http://a.example/", "http://b.example/"),
        ("http://a.example/x", "http://a.example/"), ("http://a.example/y", "http://a.example/"),
        ("http://b.example/", "http://b.example/z"), ("http://b.example/z", "http://a.example/y"),
    }
    ranks = nx.pagerank(nx.DiGraph(sorted(merged)), tol=1e-15, max_iter=10_000)
    return {ids[u]: r for u, r in ranks.items()}


@pytest.mark.django_db
def test_a_copy_gets_no_rank_and_its_links_count_once(settings):
    settings.RANK_TOLERANCE = 1e-12
    ids = _crawl_with_a_copy()
    run = rank_crawl(block="site")
    assert (run.pages, run.duplicates, run.links) == (5, 1, 6)
    stored = dict(PageRank.objects.values_list("url_id", "rank"))
    assert ids["http://a.example/index.html"] not in stored
    assert stored == pytest.approx(_expected_ranks(ids), abs=1e-9)


@pytest.mark.django_db
def test_a_mark_whose_page_changed_since_no_longer_merges():
    ids = _crawl_with_a_copy()
    Page.objects.filter(url_id=ids["http://a.example/"]).update(checksum="c2")  # re-fetched, new content
    assert rank_crawl().duplicates == 0
    assert PageRank.objects.filter(url_id=ids["http://a.example/index.html"]).exists()


@pytest.mark.django_db
def test_rank_command_blockrank_local_prints_its_distance_to_exact_pagerank_and_both_times(settings):
    settings.RANK_TOLERANCE = 1e-12
    ids = _crawl_with_a_copy()
    out = io.StringIO()
    call_command("rank", "--method", "blockrank-local", "--block", "site", "--json", stdout=out)
    summary = json.loads(out.getvalue())
    stored = dict(PageRank.objects.values_list("url_id", "rank"))
    exact = _expected_ranks(ids)
    l1 = sum(abs(stored[k] - exact[k]) for k in exact)
    assert summary["method"] == "blockrank-local" and summary["iterations"]["global"] == 0
    assert summary["exact_pagerank"]["l1_distance"] == pytest.approx(l1, abs=1e-9) and l1 > 1e-3
    assert summary["exact_pagerank"]["seconds"] >= 0 and summary["seconds"]["rank"] >= 0
    assert RankRun.objects.get().method == "blockrank-local"
    text = io.StringIO()
    call_command("rank", "--method", "blockrank-local", stdout=text)
    assert "L1 distance to exact PageRank" in text.getvalue() and "exact PageRank (uniform start)" in text.getvalue()
    call_command("rank", stdout=io.StringIO())  # the default: exact, stored over the estimate
    assert dict(PageRank.objects.values_list("url_id", "rank")) == pytest.approx(exact, abs=1e-9)


@pytest.mark.django_db
def test_analyzer_leaves_out_a_copy_marked_after_it_was_analysed():
    first = add_page("http://www.snu.ac.kr/", "text/html", html(KO))
    copy = add_page("http://www.snu.ac.kr/index.html", "text/html", html(KO))
    add_page("http://www.mit.edu/", "text/html", html(EN, '<a href="http://www.kaist.ac.kr/">k</a>'))
    pages_analyse()
    assert analysis_report(national_tld="kr")["pages"]["analyzed"] == 3
    Page.objects.filter(pk=copy.pk).update(duplicate_of=first)
    report = analysis_report(national_tld="kr")
    assert report["pages"] == {"stored": 3, "analyzed": 2, "pending": 0, "duplicates": 1}
    assert {row["language"]: row["pages"] for row in report["languages"]} == {"ko": 1, "en": 1}
    # And a copy known as one before analysis is never analysed.
    late = add_page("http://www.mit.edu/index.html", "text/html", html(EN, '<a href="http://www.kaist.ac.kr/">k</a>'))
    Page.objects.filter(pk=late.pk).update(duplicate_of=Page.objects.get(url__url="http://www.mit.edu/"))
    assert not pages_pending().filter(pk=late.pk).exists()
    assert pages_analyse().pages == 0


# -- site dedup by address and home page, before dispatch -----------------------------------------------


@pytest.mark.django_db
def test_a_new_name_on_a_known_address_fetches_its_home_page_alone_first(settings):
    from crawlcore.services.sites import server_home_first, server_twin
    from crawlcore.services.urls import NewUrl, urls_claim, urls_insert

    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.0/8",)
    urls_insert(urls=[NewUrl("http://127.0.0.1:8765/", depth=0)])
    urls_insert(urls=[NewUrl("http://localhost:8765/a", depth=2), NewUrl("http://localhost:8765/b", depth=1)])
    site, later = Server.objects.get(host="127.0.0.1"), Server.objects.get(host="localhost")
    assert (site.ip, later.ip) == ("127.0.0.1", "127.0.0.1")
    # Not merged on the address alone (virtual hosting): a suspect, its URLs waiting as usual.
    assert later.alias_of is None and later.excluded_reason == ""
    assert server_twin(server=later) == site and server_twin(server=site) is None
    assert set(Url.objects.filter(server=later).values_list("exclusion_reason", flat=True)) == {""}
    # Its home page, unknown until now, is added (depth and scope of its shallowest due URL) and claimed alone.
    home_id = server_home_first(server=later)
    home = Url.objects.get(id=home_id)
    assert (home.url, home.state, home.depth) == ("http://localhost:8765/", "init", 1)
    assert [u.url for u in urls_claim(server_id=later.id, owner="w", limit=25, only=home_id)] == [home.url]
    # Leased by us now: a second claimer gets nothing, not the other URLs.
    assert urls_claim(server_id=later.id, owner="x", limit=25, only=home_id) == []
    # The earlier site and another port on the address claim as usual.
    assert server_home_first(server=site) is None
    urls_insert(urls=[NewUrl("http://localhost:8766/", depth=0)])
    assert server_home_first(server=Server.objects.get(host="localhost", port=8766)) is None


@pytest.mark.django_db
def test_a_suspect_whose_home_page_was_tried_claims_as_usual(settings):
    from datetime import timedelta

    from django.utils import timezone

    from crawlcore.services.sites import server_home_first
    from crawlcore.services.urls import NewUrl, urls_insert

    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.0/8",)
    urls_insert(urls=[NewUrl("http://127.0.0.1:8765/", depth=0)])
    ids = urls_insert(urls=[NewUrl("http://localhost:8765/", depth=0), NewUrl("http://localhost:8765/a", depth=1)]).ids
    later = Server.objects.get(host="localhost")
    home = Url.objects.filter(id=ids["http://localhost:8765/"])
    assert server_home_first(server=later) == home.get().id
    # It failed (a step towards Dead), or waits out a back-off or a failed attempt, or robots.txt disallows it.
    for change in (
        dict(state="noresponse1", next_check_at=timezone.now() + timedelta(hours=1)),
        dict(state="init", next_check_at=timezone.now() + timedelta(minutes=5)),
        dict(state="init", next_check_at=None, exclusion_reason="robots.txt"),
        dict(state="visited", next_check_at=None, exclusion_reason=""),
    ):
        home.update(**change)
        assert server_home_first(server=later) is None, change
    # And with site dedup by address switched off there are no suspects.
    home.update(state="init", next_check_at=timezone.now(), exclusion_reason="")
    settings.CRAWL_MERGE_BY_ADDRESS = False
    assert server_home_first(server=later) is None


@pytest.mark.django_db
def test_robots_txt_out_of_reach_keeps_the_address_resolved_at_creation():
    from crawlcore.services.servers import server_save_robots

    server = Server.objects.create(scheme="http", host="a.example", port=80, ip="192.0.2.7")
    server_save_robots(server_id=server.id, kind="unreachable", text="timeout||", crawl_delay=None, ip=None)
    assert Server.objects.get(id=server.id).ip == "192.0.2.7"
    server_save_robots(server_id=server.id, kind="allow", text="", crawl_delay=None, ip="192.0.2.8")
    assert Server.objects.get(id=server.id).ip == "192.0.2.8"


@pytest.mark.django_db
def test_without_an_address_or_with_the_switch_off_the_merge_waits_for_the_home_page(settings):
    from crawlcore.services.urls import NewUrl, urls_insert

    settings.CRAWL_ALLOW_PRIVATE = ()  # untrusted loopback: a forbidden address is no address
    urls_insert(urls=[NewUrl("http://127.0.0.1:8765/", depth=0)], trusted=True)
    urls_insert(urls=[NewUrl("http://localhost:8765/", depth=0)])
    assert Server.objects.get(host="localhost").ip is None
    assert Server.objects.get(host="localhost").alias_of is None
    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.0/8",)
    settings.CRAWL_MERGE_BY_ADDRESS = False
    urls_insert(urls=[NewUrl("http://localhost:8767/", depth=0)])
    assert Server.objects.get(port=8767).ip is None and Server.objects.get(port=8767).alias_of is None


def test_lookups_are_bounded_by_the_dns_timeout(monkeypatch):
    import socket
    import time

    from crawler import lookup, resolve

    real = socket.getaddrinfo

    def slow(host, *args, **kwargs):
        if host == "hang.example":
            time.sleep(1.5)  # a resolver that does not answer in time (bounded: the pool thread ends)
        return real("127.0.0.1", *args, **kwargs)

    monkeypatch.setattr(lookup.socket, "getaddrinfo", slow)  # the resolver pool asks it
    started = time.monotonic()
    found = resolve.lookup_many([("hang.example", 80), ("quick.example", 80)], timeout=0.3)
    assert time.monotonic() - started < 1.0
    assert found == {("hang.example", 80): None, ("quick.example", 80): "127.0.0.1"}
