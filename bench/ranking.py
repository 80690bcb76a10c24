"""Benchmark: PageRank and BlockRank on synthetic web-like graphs, and the whole ranking job from
PostgreSQL to stored ranks. Prints figures; asserts nothing.

    python -m bench.ranking                                   # 100k and 1M pages, in memory
    python -m bench.ranking --sizes 100000,1000000,10000000   # 10M pages too (~8 GB of RAM)
    python -m bench.ranking --sizes 100000 --db --db-pages 1000000   # + database -> stored ranks, 1M pages
    python -m bench.ranking --sizes 10000000 --nx-max 0 --paper-rank   # + the paper's rank, timed on its own

In memory, per size: graph generation (ranking.synthetic: hosts of heavy-tailed sizes, ~77% of links
on their host, 15% dangling pages, 10 links per page), PageRank from a uniform start, BlockRank by
site and by domain (local / block / global iterations; the global phase against the uniform start),
and networkx.pagerank on graphs up to --nx-max pages, run to the same L1 threshold. With --paper-rank,
seed 003's own rank too (ranking.blockrank.blockrank_local: local rank x block rank, no global phase),
by site and by domain, timed on its own run (not read off ours) with its L1 distance to exact PageRank.
The load average before and after, and every figure, go to bench/results/ as JSON (--out).

--db: creates a fresh PostgreSQL database (127.0.0.1:5432, user postgres), migrates it with
`manage.py migrate`, loads the graph with COPY straight into crawladmin_server / crawladmin_url /
crawladmin_link, then times `manage.py rank --json` twice (first run inserts every rank row, the
second updates them; the second also runs --compare). The database is dropped at the end, also on
failure. Seed 003 ranked 100k / 1M / 10M pages in 4 / 33 / 267 s on nine 2008 PCs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time
import uuid
from contextlib import contextmanager

import numpy as np

from bench.harness.db import fill_defaults, fresh_database, manage
from bench.harness.results import add_out_option, loadavg, write_results
from crawler.urlnorm import url_hash
from ranking.blockrank import blockrank, blockrank_local
from ranking.pagerank import build_graph, pagerank
from ranking.synthetic import WebGraph, web_graph

TOL = 1e-8
SUFFIXES = ("com", "co.kr", "ac.kr", "org", "net", "go.kr")


def _timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def bench_memory(n: int, *, nx_max: int, paper_rank: bool = False) -> dict:
    w, t_gen = _timed(web_graph, n)
    graph, t_build = _timed(build_graph, w.src, w.dst, n, unique=True)
    uniform, t_pr = _timed(pagerank, graph, tol=TOL)
    out = {
        "pages": n,
        "links": graph.edges,
        "dangling": graph.dangling,
        "hosts": w.hosts,
        "domains": w.domains,
        "generate_s": round(t_gen, 2),
        "build_matrix_s": round(t_build, 3),
        "pagerank": {"seconds": round(t_pr, 3), "iterations": uniform.iterations},
    }
    for name, blocks in (("site", w.host), ("domain", w.domain)):
        marks: dict[str, float] = {}

        def mark(phase: str, k: int, residual: float, marks=marks) -> None:
            marks.setdefault(phase, time.perf_counter())  # when each phase began

        t0 = time.perf_counter()
        result = blockrank(graph, blocks, tol=TOL, on_iteration=mark)
        total = time.perf_counter() - t0
        out[f"blockrank_{name}"] = {
            "seconds": round(total, 3),
            "global_phase_seconds": round(t0 + total - marks.get("global", t0 + total), 3),
            "blocks": result.blocks,
            "iterations": {
                "local": result.local_iterations,
                "block": result.block_iterations,
                "global": result.global_iterations,
            },
            "global_iterations_saved": uniform.iterations - result.global_iterations,
            "l1_vs_pagerank": float(np.abs(result.ranks - uniform.ranks).sum()),
            "start_l1_error": float(np.abs(result.start - uniform.ranks).sum()),
            "uniform_l1_error": float(np.abs(1.0 / n - uniform.ranks).sum()),
        }
    if paper_rank:
        for name, blocks in (("site", w.host), ("domain", w.domain)):
            local, seconds = _timed(blockrank_local, graph, blocks, tol=TOL)
            out[f"paper_rank_{name}"] = {
                "seconds": round(seconds, 3),
                "blocks": local.blocks,
                "iterations": {"local": local.local_iterations, "block": local.block_iterations, "global": 0},
                "l1_vs_pagerank": float(np.abs(local.ranks - uniform.ranks).sum()),
            }
    if n <= nx_max:
        out["networkx"] = bench_networkx(w, uniform.ranks)
    return out


def bench_networkx(w: WebGraph, ours: np.ndarray) -> dict:
    import networkx as nx

    t = time.perf_counter()
    g = nx.DiGraph()
    g.add_nodes_from(range(w.n))
    g.add_edges_from(zip(w.src.tolist(), w.dst.tolist(), strict=True))
    t_build = time.perf_counter() - t
    # networkx stops when sum |x - x_last| < n * tol: the same L1 threshold as ours with tol = TOL / n.
    ranks, t_pr = _timed(nx.pagerank, g, tol=TOL / w.n, max_iter=1000)
    diff = float(np.abs(np.array([ranks[i] for i in range(w.n)]) - ours).max())
    return {"build_graph_s": round(t_build, 2), "pagerank_s": round(t_pr, 3), "max_abs_diff_vs_ours": diff}


# --- database -> stored ranks -----------------------------------------------------------------


@contextmanager
def _indexes_dropped(cur, table: str):
    """Plain indexes are dropped for the load and rebuilt after (a sorted build beats 10M random inserts);
    those behind constraints stay."""
    cur.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        " WHERE x.indrelid = %s::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)",
        [table],
    )
    indexes = cur.fetchall()
    for name, _ in indexes:
        cur.execute(f'DROP INDEX "{name}"')
    yield
    for _, definition in indexes:
        cur.execute(definition)


def _binary_copy(columns: list[np.ndarray]) -> io.BytesIO:
    """int8 columns in COPY's binary format."""
    dtype = np.dtype([("n", ">i2")] + [x for i in range(len(columns)) for x in ((f"l{i}", ">i4"), (f"v{i}", ">i8"))])
    rows = np.empty(len(columns[0]), dtype=dtype)
    rows["n"] = len(columns)
    for i, col in enumerate(columns):
        rows[f"l{i}"] = 8
        rows[f"v{i}"] = col
    return io.BytesIO(b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8 + rows.tobytes() + b"\xff\xff")


def load_graph(url: str, w: WebGraph) -> float:
    """COPY the graph into the crawl's tables: server h<host>.dom<domain>.<suffix> per host, URL id =
    page + 1 (fetched pages Visited, dangling ones Init), a Link row per edge."""
    import psycopg2

    t0 = time.perf_counter()
    host_domain = np.zeros(w.hosts, dtype=np.int64)
    host_domain[w.host] = w.domain
    hostnames = [f"h{h}.dom{d}.{SUFFIXES[d % len(SUFFIXES)]}" for h, d in enumerate(host_domain.tolist())]
    has_links = np.bincount(w.src, minlength=w.n) > 0
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no FK triggers during the load
        for table, given in (
            ("crawladmin_server", {"id", "scheme", "host", "port"}),
            ("crawladmin_url", {"id", "url", "url_hash", "server_id", "state"}),
            ("crawladmin_link", {"id", "from_url_id", "to_url_id"}),
        ):
            fill_defaults(cur, table, given)
        servers = "".join(f"{h + 1}\thttp\t{name}\t80\n" for h, name in enumerate(hostnames))
        cur.copy_expert("COPY crawladmin_server (id, scheme, host, port) FROM STDIN", io.StringIO(servers))
        lines = []
        for page, (h, fetched) in enumerate(zip(w.host.tolist(), has_links.tolist(), strict=True)):
            u = f"http://{hostnames[h]}/p{page}"
            lines.append(f"{page + 1}\t{u}\t{url_hash(u)}\t{h + 1}\t{'visited' if fetched else 'init'}\n")
        with _indexes_dropped(cur, "crawladmin_url"):
            cur.copy_expert(
                "COPY crawladmin_url (id, url, url_hash, server_id, state) FROM STDIN", io.StringIO("".join(lines))
            )
        del lines
        ids = np.arange(1, len(w.src) + 1, dtype=np.int64)
        with _indexes_dropped(cur, "crawladmin_link"):
            payload = _binary_copy([ids, w.src.astype(np.int64) + 1, w.dst.astype(np.int64) + 1])
            cur.copy_expert("COPY crawladmin_link (id, from_url_id, to_url_id) FROM STDIN (FORMAT binary)", payload)
        for table in ("crawladmin_server", "crawladmin_url", "crawladmin_link"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True  # VACUUM runs outside a transaction
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE crawladmin_server, crawladmin_url, crawladmin_link")
    finally:
        conn.close()
    return time.perf_counter() - t0


def bench_database(n: int) -> dict:
    w, t_gen = _timed(web_graph, n)
    with fresh_database("rank") as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "bench-ranking-" + uuid.uuid4().hex * 2}
        _, t_migrate = _timed(manage, env, "migrate", "--verbosity", "0")
        t_load = load_graph(url, w)
        runs = []
        for args in (("rank", "--json", "--no-progress"), ("rank", "--json", "--no-progress", "--compare")):
            proc, wall = _timed(manage, env, *args)
            summary = json.loads(proc.stdout)
            runs.append(
                {
                    "command": "manage.py " + " ".join(args),
                    "wall_s": round(wall, 2),
                    "seconds": summary["seconds"],
                    "iterations": summary["iterations"],
                }
            )
    return {
        "pages": n,
        "links": len(w.src),
        "sites": w.hosts,
        "generate_s": round(t_gen, 2),
        "migrate_s": round(t_migrate, 2),
        "load_s": round(t_load, 2),
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="Comma-separated page counts (in memory)")
    parser.add_argument("--nx-max", type=int, default=100_000, help="Run networkx on graphs up to this many pages")
    parser.add_argument("--db", action="store_true", help="Also time PostgreSQL -> stored ranks")
    parser.add_argument("--db-pages", type=int, default=1_000_000, help="Pages in the database benchmark")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON only")
    parser.add_argument(
        "--paper-rank", action="store_true", help="Also time seed 003's local x block rank (no global phase) alone"
    )
    add_out_option(parser)
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"--sizes: comma-separated page counts, not {args.sizes!r}") from None
    load_before = loadavg()
    if not args.json:
        print(f"bench.ranking: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in load_before)}")
    figures = {"memory": [], "database": None}
    for n in sizes:
        result = bench_memory(n, nx_max=args.nx_max, paper_rank=args.paper_rank)
        figures["memory"].append(result)
        if not args.json:
            _print_memory(result)
    if args.db:
        figures["database"] = bench_database(args.db_pages)
        if not args.json:
            _print_database(figures["database"])
    load_after = loadavg()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in load_after)}")
    write_results("ranking", args, figures, load_before=load_before, load_after=load_after, out=args.out)


def _print_memory(r: dict) -> None:
    print(
        f"\n{r['pages']:,} pages, {r['links']:,} links ({r['dangling']:,} dangling), {r['hosts']:,} sites, "
        f"{r['domains']:,} domains; generated in {r['generate_s']} s, matrix in {r['build_matrix_s']} s"
    )
    print(f"  PageRank, uniform start    {r['pagerank']['seconds']:7.3f} s  {r['pagerank']['iterations']} iterations")
    for name in ("site", "domain"):
        b = r[f"blockrank_{name}"]
        its = b["iterations"]
        print(
            f"  BlockRank by {name:<6}       {b['seconds']:7.3f} s  local {its['local']}, block {its['block']}, "
            f"global {its['global']} ({b['global_iterations_saved']:+d} saved; global phase "
            f"{b['global_phase_seconds']} s); start L1 error {b['start_l1_error']:.3f} vs uniform "
            f"{b['uniform_l1_error']:.3f}"
        )
    for name in ("site", "domain"):
        if f"paper_rank_{name}" in r:
            b = r[f"paper_rank_{name}"]
            its = b["iterations"]
            print(
                f"  paper's rank by {name:<6}    {b['seconds']:7.3f} s  local {its['local']}, block {its['block']}, "
                f"no global phase (timed alone); L1 to exact PageRank {b['l1_vs_pagerank']:.4f}"
            )
    if "networkx" in r:
        x = r["networkx"]
        print(
            f"  networkx.pagerank          {x['pagerank_s']:7.3f} s  (+{x['build_graph_s']} s to build its graph); "
            f"max |diff| vs ours {x['max_abs_diff_vs_ours']:.1e}"
        )


def _print_database(d: dict) -> None:
    print(
        f"\nPostgreSQL -> stored ranks: {d['pages']:,} pages, {d['links']:,} links, {d['sites']:,} sites "
        f"(migrate {d['migrate_s']} s, COPY load {d['load_s']} s)"
    )
    for run in d["runs"]:
        s = run["seconds"]
        print(
            f"  {run['command']:<52} {run['wall_s']:6.2f} s wall (read {s['read']} s, rank {s['rank']} s, "
            f"write {s['write']} s); iterations {run['iterations']}"
        )


if __name__ == "__main__":
    main()
