"""Benchmark: seed 003's Table 8 on this machine: crawl, convert and rank time for 100,000 and
1,000,000 pages, beside the paper's nine machines. Prints figures; asserts nothing, but says
where every figure comes from.

    python -m bench.seed003                                   # real crawl of 20 x 1,000 pages, then 100k and 1M
    python -m bench.seed003 --crawl-servers 20 --crawl-pages 5000    # a real 100,000-page crawl (~10 min here)
    python -m bench.seed003 --no-crawl --sizes 100000         # only the generated-database figures, quickly

1. Crawl: a REAL crawl (bench.throughput's, unchanged): a generated web (testweb.generated: `--crawl-servers`
   sites x `--crawl-pages` pages of ~10 KB, 30 links each) served by our own nginx on loopback, a fresh
   PostgreSQL database, a private Redis, celery workers and beat, `manage.py crawl` from the home pages until
   nothing is due. It gives the pages/s of this machine. The 100k and 1M crawl figures are that rate
   EXTRAPOLATED (pages / rate), labelled so, unless the crawl was itself that size (then measured).
   The crawled database is then ranked in place (`manage.py rank`, both methods): convert and rank of a
   real crawl, at the crawl's size.
2. Convert and rank at 100k and 1M: a GENERATED DATABASE (bench.ranking: ranking.synthetic's web-like graph,
   10 links per page, COPY into the crawl's tables of a fresh PostgreSQL database), then the commands a user
   runs: `manage.py rank --json` (exact PageRank, started from BlockRank) and `manage.py rank --method
   blockrank-local --json` (the paper's rank: local x block rank, no global iteration; it prints its L1
   distance to exact PageRank and both times). Convert = reading the graph and converting it (dense site,
   domain, community and page IDs, links in page IDs, the sparse matrix); rank = the method's iterations.
   Writing the ranks back is printed apart (the paper's rank step writes files).
3. The paper's rank at 10M pages does not fit a database here: `python -m bench.ranking --sizes 10000000
   --nx-max 0 --paper-rank` times it in memory, apart from ours (exact PageRank, and BlockRank with its
   global phase).
Every figure, with the load average before and after, goes to bench/results/ as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from argparse import Namespace
from pathlib import Path

from bench.harness.db import fresh_database, manage
from bench.harness.results import add_out_option, loadavg, write_results

# Table 8 of the paper: seconds on nine Pentium 4 2.0 GHz PCs (512 MB each) on one 100 Mbps hub.
PAPER = {
    100_000: {"crawl": 2_750, "convert": 222, "rank": 4, "total": 2_977},
    1_000_000: {"crawl": 28_710, "convert": 3_037, "rank": 33, "total": 31_780},
    10_000_000: {"crawl": 356_185, "convert": 32_000, "rank": 267, "total": 388_452},
}


def _rank_commands(env: dict) -> dict:
    """`rank` with both methods in the database of `env`: the summaries and each command's wall time."""
    out = {}
    for method in ("blockrank", "blockrank-local"):
        t = time.perf_counter()
        proc = manage(env, "rank", "--json", "--no-progress", "--method", method)
        out[method] = {"wall_s": round(time.perf_counter() - t, 2), **json.loads(proc.stdout)}
    return out


def real_crawl(servers: int, pages: int, *, port: int, net: str, max_seconds: float) -> dict:
    """bench.throughput's crawl of ours on a generated web, then both rankings in its database."""
    from bench.harness.services import find_nginx
    from bench.throughput import BenchError, check_ours, default_workers, run_ours
    from testweb.generated import NginxWeb, Web, WebSpec, ensure_written, port_is_free

    if find_nginx() is None or shutil.which("redis-server") is None:
        raise SystemExit("the real crawl needs nginx and redis-server (or run with --no-crawl)")
    spec = WebSpec(servers=servers, pages=pages, net=net, port=port)
    if not port_is_free(spec):
        raise SystemExit(f"something listens on {net}.x:{port}: choose another --port or --net")
    args = Namespace(workers=default_workers(servers, 2), slots=2, env=[], max_seconds=max_seconds, dispatch_only=False)
    tmp = Path(tempfile.mkdtemp(prefix="bench-seed003-"))
    try:
        written = ensure_written(tmp / "www", spec)
        (tmp / "nginx").mkdir()
        (tmp / "run").mkdir()
        with NginxWeb(tmp / "www", spec, tmp / "nginx") as nginx:
            try:
                r = run_ours(args, Web(spec), nginx, tmp / "run", after=_rank_commands)
            except BenchError as exc:
                raise SystemExit(f"the crawl failed: {exc}") from None
        problems = check_ours(r, Web(spec).expected())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "servers": servers,
        "pages_per_server": pages,
        "written": written,
        "pages": r["pages"],
        "seconds": r["seconds"],
        "pages_per_s": r["pages_per_s"],
        "cpu_s_per_page": r["cpu_s_per_page"],
        "machine_busy_share": r["machine_busy_share"],
        "problems": problems,
        "rank": r["after"],
    }


def generated_database(n: int) -> dict:
    """bench.ranking's synthetic graph of n pages COPY'd into a fresh database, then both rankings."""
    from bench.ranking import load_graph
    from ranking.synthetic import web_graph

    t = time.perf_counter()
    w = web_graph(n)
    generate_s = time.perf_counter() - t
    with fresh_database("s003") as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "bench-seed003-" + uuid.uuid4().hex * 2}
        manage(env, "migrate", "--verbosity", "0")
        load_s = load_graph(url, w)
        ranks = _rank_commands(env)
    return {
        "pages": n,
        "links": len(w.src),
        "sites": w.hosts,
        "generate_s": round(generate_s, 1),
        "load_s": round(load_s, 1),
        "rank": ranks,
    }


# -- printing ---------------------------------------------------------------------------------------------


def _n(value) -> str:
    return "-" if value is None else f"{value:,}"


def _convert_s(summary: dict) -> float:
    return round(summary["seconds"]["read"] + summary["seconds"]["convert"], 2)


def _crawl_figure(n: int, crawl: dict | None) -> tuple[str, float | None]:
    if crawl is None:
        return "not run", None
    if crawl["pages"] == n:
        return f"{crawl['seconds']:,.0f} (measured)", crawl["seconds"]
    est = n / crawl["pages_per_s"]
    return f"{est:,.0f} (extrapolated)", est


def print_report(crawl: dict | None, sizes: dict[int, dict]) -> None:
    if crawl is not None:
        exact, local = crawl["rank"]["blockrank"], crawl["rank"]["blockrank-local"]
        print(
            f"\nREAL CRAWL (generated web, nginx on loopback, PostgreSQL + Redis + celery workers): "
            f"{crawl['servers']} sites x {crawl['pages_per_server']:,} pages = {crawl['pages']:,} pages in "
            f"{crawl['seconds']:,.1f} s = {crawl['pages_per_s']:,.1f} pages/s "
            f"({crawl['cpu_s_per_page'] * 1000:.1f} CPU ms per page, machine {crawl['machine_busy_share']:.0%} busy)"
        )
        print("  crawl matched the web" if not crawl["problems"] else f"  MISMATCH: {crawl['problems']}")
        print(
            f"  its database ranked in place: convert {_convert_s(exact)} s,"
            f" exact PageRank {exact['seconds']['rank']} s"
            f" ({exact['links']:,} links); blockrank-local {local['seconds']['rank']} s, L1 to exact "
            f"{local['exact_pagerank']['l1_distance']:.3f}; write {exact['seconds']['write']} s"
        )
    for n, d in sizes.items():
        exact, local = d["rank"]["blockrank"], d["rank"]["blockrank-local"]
        x = local["exact_pagerank"]
        print(
            f"\nGENERATED DATABASE {n:,} pages, {d['links']:,} links, {d['sites']:,} sites "
            f"(generated {d['generate_s']} s, COPY {d['load_s']} s):"
        )
        print(
            f"  rank --method blockrank        read {exact['seconds']['read']} s,"
            f" convert {exact['seconds']['convert']} s,"
            f" rank {exact['seconds']['rank']} s (iterations {exact['iterations']['local']}/"
            f"{exact['iterations']['block']}/{exact['iterations']['global']}), write {exact['seconds']['write']} s;"
            f" command {exact['wall_s']} s"
        )
        print(
            f"  rank --method blockrank-local  rank {local['seconds']['rank']} s (local {local['iterations']['local']},"
            f" block {local['iterations']['block']}, no global); exact PageRank from a uniform start {x['seconds']} s"
            f" ({x['iterations']} iterations); L1 distance to exact {x['l1_distance']:.4f}; command {local['wall_s']} s"
        )
    print(f"\nSeed 003 Table 8 (seconds; paper: 9 machines) beside ours (this machine: {os.cpu_count()} cores, shared)")
    head = (
        "pages",
        "paper crawl",
        "ours crawl",
        "paper convert",
        "ours convert",
        "paper rank",
        "ours rank exact",
        "ours rank local",
        "paper total",
        "ours total",
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for n in sorted(set(PAPER) | set(sizes)):
        p = PAPER.get(n, {})
        d = sizes.get(n)
        crawl_text, crawl_s = _crawl_figure(n, crawl) if d else ("not run", None)
        if d:
            exact, local = d["rank"]["blockrank"], d["rank"]["blockrank-local"]
            conv, rank_e, rank_l = _convert_s(exact), exact["seconds"]["rank"], local["seconds"]["rank"]
            total = (
                f"{crawl_s + conv + rank_e:,.0f}" + (" (crawl extrapolated)" if "extra" in crawl_text else "")
                if crawl_s is not None
                else "-"
            )
            ours = (crawl_text, f"{conv}", f"{rank_e}", f"{rank_l}", total)
        else:
            ours = ("not run",) * 5
        row = (
            f"{n:,}",
            _n(p.get("crawl")),
            ours[0],
            _n(p.get("convert")),
            ours[1],
            _n(p.get("rank")),
            ours[2],
            ours[3],
            _n(p.get("total")),
            ours[4],
        )
        print(" | ".join(row))
    print("ours: crawl from the real crawl above; convert (read + convert) and rank from the generated database.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000", help="generated-database sizes (pages)")
    ap.add_argument("--no-crawl", action="store_true", help="skip the real crawl")
    ap.add_argument("--crawl-servers", type=int, default=20)
    ap.add_argument("--crawl-pages", type=int, default=1000, help="pages per server in the real crawl")
    ap.add_argument("--net", default="127.0.3", help="the crawl's sites are NET.1 … (not the throughput's)")
    ap.add_argument("--port", type=int, default=8093)
    ap.add_argument("--max-seconds", type=float, default=1800, help="the crawl stops here (and counts as failed)")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    add_out_option(ap)
    args = ap.parse_args(argv)
    load_before = loadavg()
    print(
        f"bench.seed003: machine {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    crawl = None
    if not args.no_crawl:
        print(f"real crawl: {args.crawl_servers} x {args.crawl_pages:,} pages …", flush=True)
        crawl = real_crawl(
            args.crawl_servers, args.crawl_pages, port=args.port, net=args.net, max_seconds=args.max_seconds
        )
    sizes = {}
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        print(f"generated database: {n:,} pages …", flush=True)
        sizes[n] = generated_database(n)
    print_report(crawl, sizes)
    figures = {"crawl": crawl, "sizes": sizes, "paper": PAPER}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    write_results("seed003", args, json.loads(json.dumps(figures, default=str)), load_before=load_before, out=args.out)
    return 1 if crawl and crawl["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
