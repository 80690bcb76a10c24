"""Ranking the crawl's graph on SQLite (the embedded mode): bulk read, BlockRank, bulk write, selectors,
the command, the beat job, the admin. The PostgreSQL path is in test_ranking_cluster.py."""

from __future__ import annotations

import io
import json

import networkx as nx
import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django_celery_beat.models import PeriodicTask

from crawlcore.models import Link, Server, Url
from crawler.urlnorm import url_hash
from ranking.models import PageRank, RankRun
from ranking.selectors import latest_run, top_pages
from ranking.services import rank_crawl, run_summary

pytestmark = pytest.mark.django_db


def make_crawl(hosts: dict[str, int], links: list[tuple[str, str]], groups: dict[str, str] | None = None):
    """Servers named in `hosts` with that many pages each (http://host/p<i>), and links between them."""
    groups = groups or {}
    servers = {h: Server.objects.create(scheme="http", host=h, port=80, group=groups.get(h, "")) for h in hosts}
    urls = [
        Url(url=f"http://{h}/p{i}", url_hash=url_hash(f"http://{h}/p{i}"), server=servers[h])
        for h, count in hosts.items()
        for i in range(count)
    ]
    Url.objects.bulk_create(urls)
    ids = dict(Url.objects.values_list("url", "id"))
    Link.objects.bulk_create([Link(from_url_id=ids[a], to_url_id=ids[b]) for a, b in links])
    return servers, ids


def nx_ranks_by_url_id() -> dict[int, float]:
    g = nx.DiGraph()
    g.add_nodes_from(Url.objects.values_list("id", flat=True))
    g.add_edges_from(Link.objects.values_list("from_url_id", "to_url_id"))
    return nx.pagerank(g, tol=1e-15, max_iter=10_000)


def random_crawl(seed: int = 0):
    rng = np.random.default_rng(seed)
    hosts = {"www.uni.ac.kr": 12, "cs.uni.ac.kr": 8, "www.example.com": 10, "blog.example.com": 5, "solo.org": 1}
    names = [f"http://{h}/p{i}" for h, c in hosts.items() for i in range(c)]
    fetched = names[:25]  # the rest were never fetched: link targets with no links (dangling)
    links = {(str(rng.choice(fetched)), str(rng.choice(names))) for _ in range(120)}
    return make_crawl(hosts, sorted(links), groups={"blog.example.com": "friends", "solo.org": "friends"})


@pytest.mark.parametrize("block", ["site", "domain", "community"])
def test_stored_ranks_equal_networkx_for_every_url(settings, block):
    settings.RANK_TOLERANCE = 1e-12
    random_crawl()
    run = rank_crawl(block=block, compare=True)
    expected = nx_ranks_by_url_id()
    stored = dict(PageRank.objects.values_list("url_id", "rank"))
    assert stored.keys() == expected.keys()
    assert max(abs(stored[k] - expected[k]) for k in expected) < 1e-9
    assert (run.pages, run.links, run.block, run.converged) == (36, Link.objects.count(), block, True)
    assert run.blocks == {"site": 5, "domain": 3, "community": 3}[block]
    assert run.uniform_iterations is not None and run_summary(run)["iterations"]["saved"] is not None


def test_rows_carry_site_domain_and_community():
    servers, ids = random_crawl()
    rank_crawl(block="domain")
    row = PageRank.objects.get(url_id=ids["http://cs.uni.ac.kr/p0"])
    assert (row.server_id, row.domain, row.community) == (servers["cs.uni.ac.kr"].id, "uni.ac.kr", "uni.ac.kr")
    row = PageRank.objects.get(url_id=ids["http://blog.example.com/p1"])
    assert (row.domain, row.community) == ("example.com", "friends")
    same_domain = PageRank.objects.filter(domain="uni.ac.kr")
    assert same_domain.values("domain_id").distinct().count() == 1 and same_domain.count() == 20
    # Blocks by domain: the local ranks of one domain's pages, over both its sites, share 1.
    assert sum(same_domain.values_list("local_rank", flat=True)) == pytest.approx(1.0, abs=1e-9)
    assert len(set(same_domain.values_list("block_rank", flat=True))) == 1


def test_an_alias_server_ranks_as_the_site_it_aliases():
    servers, ids = make_crawl({"a.example": 2, "www.a.example": 1}, [("http://a.example/p0", "http://www.a.example/p0")])
    Server.objects.filter(pk=servers["www.a.example"].pk).update(alias_of=servers["a.example"])
    run = rank_crawl(block="site")
    assert run.blocks == 1
    assert PageRank.objects.get(url_id=ids["http://www.a.example/p0"]).server_id == servers["a.example"].id


def test_a_rerun_rewrites_rows_and_drops_urls_that_are_gone():
    random_crawl()
    _, ids = make_crawl({"gone.example": 1}, [])
    first = rank_crawl()
    assert PageRank.objects.count() == 37
    # A URL removed behind the ORM's back (no cascade): its rank row is an orphan until the next run.
    with connection.cursor() as cur:
        cur.execute("DELETE FROM crawladmin_url WHERE id = %s", [ids["http://gone.example/p0"]])
    second = rank_crawl()
    assert PageRank.objects.count() == 36
    assert Url.objects.count() == 36
    assert set(PageRank.objects.values_list("computed_at", flat=True)) == {second.finished_at}
    assert second.finished_at > first.finished_at and RankRun.objects.count() == 2
    assert sum(PageRank.objects.values_list("rank", flat=True)) == pytest.approx(1.0)


def test_an_empty_crawl_and_a_single_page():
    run = rank_crawl()
    assert (run.pages, run.links, PageRank.objects.count()) == (0, 0, 0)
    make_crawl({"one.example": 1}, [])
    rank_crawl()
    assert list(PageRank.objects.values_list("rank", flat=True)) == [pytest.approx(1.0)]


def test_selectors_give_top_pages_overall_per_site_and_per_domain():
    hub = [(f"http://b.example/p{i}", "http://a.example/p0") for i in range(5)]
    out = [("http://a.example/p0", "http://a.example/p1"), ("http://a.example/p0", "http://a.example/p2")]
    servers, ids = make_crawl({"a.example": 3, "b.example": 6}, hub + out)
    rank_crawl()
    top = top_pages(limit=3)
    assert [p["url"] for p in top] == ["http://a.example/p0", "http://a.example/p1", "http://a.example/p2"]
    assert top[0]["rank"] >= top[1]["rank"] >= top[2]["rank"] and top[0]["state"] == "init"
    b_top = top_pages(site=servers["b.example"], limit=10)
    assert len(b_top) == 6 and {p["server_id"] for p in b_top} == {servers["b.example"].id}
    assert top_pages(domain="a.example", limit=1)[0]["url_id"] == ids["http://a.example/p0"]
    assert latest_run().pages == 9


def test_rank_command_prints_json_summary():
    random_crawl()
    out = io.StringIO()
    call_command("rank", "--block", "domain", "--json", "--compare", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["pages"] == 36 and summary["block"] == "domain"
    assert summary["iterations"]["uniform_start"] - summary["iterations"]["global"] == summary["iterations"]["saved"]


def test_rank_command_on_an_edge_file_agrees_with_networkx(tmp_path):
    rng = np.random.default_rng(11)
    pairs = {(int(a), int(b)) for a, b in rng.integers(1000, 1200, (600, 2))} | {(5, 5), (1000, 7)}
    (tmp_path / "edges.csv").write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in sorted(pairs)))
    call_command("rank", "--edges", str(tmp_path / "edges.csv"), "--out", str(tmp_path / "ranks.csv"),
                 stdout=io.StringIO())
    lines = (tmp_path / "ranks.csv").read_text().splitlines()
    assert lines[0] == "node,rank"
    got = {int(node): float(rank) for node, rank in (line.split(",") for line in lines[1:])}
    expected = nx.pagerank(nx.DiGraph(sorted(pairs)), tol=1e-15, max_iter=10_000)
    assert got.keys() == expected.keys()
    assert max(abs(got[k] - expected[k]) for k in expected) < 1e-6


def test_beat_runs_the_job_daily_on_housekeeping():
    job = PeriodicTask.objects.get(task="tasks.rank.rank_crawl")
    assert (job.queue, job.enabled, job.interval.every, job.interval.period) == ("housekeeping", True, 1, "days")
    from crawladmin.celery import app
    from tasks.rank import rank_crawl_task

    assert app.amqp.router.route({}, "tasks.rank.rank_crawl")["queue"].name == "housekeeping"
    random_crawl()
    assert rank_crawl_task.apply().get()["pages"] == 36


def test_admin_lists_ranks_sortable_and_filtered_by_site(admin_client):
    servers, _ = random_crawl()
    rank_crawl()
    response = admin_client.get("/admin/ranking/pagerank/", {"o": "-2", "server__id__exact": servers["solo.org"].id})
    assert response.status_code == 200
    assert b"http://solo.org/p0" in response.content and b"http://www.uni.ac.kr/p0" not in response.content
    assert admin_client.get("/admin/ranking/rankrun/").status_code == 200
