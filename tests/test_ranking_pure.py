"""Ranking's pure modules: PageRank against networkx, BlockRank's fixed point, converting, edge files."""

from __future__ import annotations

import io

import networkx as nx
import numpy as np
import pytest

from ranking.blockrank import blockrank, local_pageranks
from ranking.convert import Site, convert
from ranking.edges import EdgeFileError, read_edges, write_ranks
from ranking.pagerank import build_graph, pagerank
from ranking.synthetic import web_graph

TIGHT = 1e-12  # our L1 residual threshold in comparisons; networkx is run tighter still


def nx_ranks(n: int, edges, *, alpha: float = 0.85) -> np.ndarray:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    ranks = nx.pagerank(g, alpha=alpha, tol=1e-15, max_iter=10_000)
    return np.array([ranks[i] for i in range(n)])


def ours(n: int, edges, **kw) -> np.ndarray:
    src = [a for a, _ in edges]
    dst = [b for _, b in edges]
    return pagerank(build_graph(src, dst, n), tol=TIGHT, **kw).ranks


@pytest.mark.parametrize("seed", range(8))
def test_pagerank_equals_networkx_on_random_graphs_with_dangling_pages(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    m = int(rng.integers(0, 4 * n))
    # Sources drawn from part of the pages only, so some pages are dangling; duplicates and self-links occur.
    src = rng.integers(0, max(1, n * 2 // 3), m)
    dst = rng.integers(0, n, m)
    edges = list(zip(src.tolist(), dst.tolist(), strict=True))
    np.testing.assert_allclose(ours(n, edges), nx_ranks(n, edges), rtol=0, atol=1e-9)


HAND_MADE = {
    "chain ending in a dangling page": (4, [(0, 1), (1, 2), (2, 3)]),
    "star into a hub that links nowhere": (5, [(1, 0), (2, 0), (3, 0), (4, 0)]),
    "cycle and an isolated page": (4, [(0, 1), (1, 2), (2, 0)]),
    "self-link and duplicates": (3, [(0, 0), (0, 1), (0, 1), (1, 2), (2, 0)]),
    "no links at all": (5, []),
    "two components, one all dangling": (6, [(0, 1), (1, 0), (2, 3), (2, 4), (2, 5)]),
}


@pytest.mark.parametrize("name", HAND_MADE)
def test_pagerank_equals_networkx_on_hand_made_graphs(name):
    n, edges = HAND_MADE[name]
    ranks = ours(n, edges)
    np.testing.assert_allclose(ranks, nx_ranks(n, edges), rtol=0, atol=1e-9)
    assert ranks.sum() == pytest.approx(1.0, abs=1e-12)


def test_other_damping_factors_match_networkx():
    n, edges = HAND_MADE["two components, one all dangling"]
    for alpha in (0.0, 0.5, 0.95):
        np.testing.assert_allclose(ours(n, edges, damping=alpha), nx_ranks(n, edges, alpha=alpha), atol=1e-9)


def test_empty_graph_and_single_page():
    empty = build_graph([], [], 0)
    assert pagerank(empty).ranks.shape == (0,)
    assert blockrank(empty, np.zeros(0, dtype=int)).ranks.shape == (0,)
    for edges in ([], [(0, 0)]):
        single = build_graph([a for a, _ in edges], [b for _, b in edges], 1)
        assert pagerank(single).ranks.tolist() == [1.0]
        result = blockrank(single, np.zeros(1, dtype=int))
        assert result.ranks.tolist() == pytest.approx([1.0]) and result.converged


def test_edges_outside_the_graph_are_refused():
    with pytest.raises(ValueError):
        build_graph([0, 3], [1, 0], 3)


@pytest.mark.parametrize("kind", ["site", "domain", "community"])
def test_blockrank_ends_at_pagerank_with_blocks_from_converting(kind):
    sites = [
        Site(1, "www.uni.ac.kr"), Site(2, "cs.uni.ac.kr"), Site(3, "shop.example.com", group="partners"),
        Site(4, "blog.example.com", group="partners"), Site(5, "10.0.0.7"),
    ]
    rng = np.random.default_rng(7)
    url_ids = np.arange(100, 160)
    url_server = rng.integers(1, 6, len(url_ids))
    link_from = rng.choice(url_ids[:45], 240)  # the last 15 URLs were never fetched: dangling
    link_to = rng.choice(url_ids, 240)
    c = convert(sites, url_ids, url_server, link_from, link_to)
    graph = build_graph(c.src, c.dst, c.pages)
    result = blockrank(graph, c.blocks(kind), tol=TIGHT)
    plain = pagerank(graph, tol=TIGHT)
    assert result.converged and result.blocks == {"site": 5, "domain": 3, "community": 3}[kind]
    np.testing.assert_allclose(result.ranks, plain.ranks, atol=1e-10)
    edges = list(zip(c.src.tolist(), c.dst.tolist(), strict=True))
    np.testing.assert_allclose(result.ranks, nx_ranks(c.pages, edges), atol=1e-9)


def test_local_ranks_are_a_distribution_in_every_block():
    w = web_graph(3000, seed=3)
    graph = build_graph(w.src, w.dst, w.n, unique=True)
    local, _ = local_pageranks(graph, w.host.astype(np.int64), w.hosts, damping=0.85, tol=1e-10, max_iter=500)
    np.testing.assert_allclose(np.bincount(w.host, weights=local, minlength=w.hosts), 1.0, atol=1e-9)


@pytest.mark.parametrize("by", ["host", "domain"])
def test_blockrank_start_saves_global_iterations_on_a_web_like_graph(by):
    w = web_graph(30_000, seed=1)
    graph = build_graph(w.src, w.dst, w.n, unique=True)
    uniform = pagerank(graph)
    result = blockrank(graph, getattr(w, by))
    assert result.global_iterations < uniform.iterations
    # Same fixed point: both are within the tolerance's error bound of it (5.7 * tol at 0.85).
    assert np.abs(result.ranks - uniform.ranks).sum() < 12 * 1e-8
    # And the start vector is much nearer to it than a uniform vector is.
    assert np.abs(result.start - uniform.ranks).sum() < 0.6 * np.abs(1 / w.n - uniform.ranks).sum()


def test_converting_assigns_dense_ids_by_site_domain_and_community():
    sites = [
        Site(10, "www.example.co.kr"), Site(11, "news.example.co.kr", group="press"),
        Site(12, "example.co.kr", alias_of=10), Site(13, "other.org"), Site(14, "127.0.0.1"),
    ]
    url_ids = np.array([7, 3, 5, 9, 11, 13])
    url_server = np.array([10, 11, 12, 13, 14, 10])
    c = convert(sites, url_ids, url_server, np.array([3, 5, 99]), np.array([7, 3, 5]))
    assert c.url_ids.tolist() == [3, 5, 7, 9, 11, 13]  # page id = position, by URL id
    assert c.page_server.tolist() == [11, 10, 10, 13, 14, 10]  # server 12 is an alias of 10: one site
    assert c.site_servers.tolist() == [10, 11, 13, 14]
    assert c.page_site.tolist() == [1, 0, 0, 2, 3, 0]
    assert c.domains == ["127.0.0.1", "example.co.kr", "other.org"]
    assert [c.domains[d] for d in c.page_domain] == ["example.co.kr"] * 3 + ["other.org", "127.0.0.1"] + [
        "example.co.kr"
    ]
    assert [c.communities[k] for k in c.page_community] == ["press", "example.co.kr", "example.co.kr", "other.org",
                                                            "127.0.0.1", "example.co.kr"]
    assert (c.src.tolist(), c.dst.tolist(), c.dropped_links) == ([0, 1], [2, 0], 1)  # the link from URL 99: gone


def test_edge_file_of_integer_ids_with_header_and_a_lone_node():
    edges = read_edges(io.StringIO("src,dst\n10,2\n2,10\n# a comment\n\n2,7\n42\n"))
    assert edges.nodes == [2, 7, 10, 42]
    assert list(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == [(2, 0), (0, 2), (0, 1)]


def test_edge_file_of_urls_keeps_them_as_strings():
    edges = read_edges(io.StringIO("http://a.example/,http://b.example/x\nhttp://b.example/x,1\n"))
    assert edges.nodes == ["http://a.example/", "http://b.example/x", "1"]


def test_edge_file_with_three_fields_is_refused():
    with pytest.raises(EdgeFileError, match="line 2"):
        read_edges(io.StringIO("1,2\n1,2,3\n"))


def test_written_ranks_come_highest_first_and_round_trip():
    out = io.StringIO()
    ranks = np.array([0.2, 0.5, 0.3])
    write_ranks(out, ["a", "b", "c"], ranks)
    lines = out.getvalue().splitlines()
    assert lines[0] == "node,rank" and [line.split(",")[0] for line in lines[1:]] == ["b", "c", "a"]
    assert float(lines[1].split(",")[1]) == 0.5
