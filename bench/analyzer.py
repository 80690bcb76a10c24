"""Benchmark: `manage.py analyze` over 1,000,000 synthetic pages in a fresh PostgreSQL database.
Prints figures; asserts nothing.

    python -m bench.analyzer                        # 1M pages, 20k hosts, one run
    python -m bench.analyzer --pages 100000 --runs 3

Creates a database on 127.0.0.1:5432 (user postgres; CRAWLADMIN_TEST_PG overrides), runs
`manage.py migrate` with DATABASE_URL and DJANGO_SECRET_KEY, loads the crawl with COPY straight into
crawladmin_server / crawladmin_url / crawladmin_page (analyzer.synthetic.synthetic_pages: small bodies,
HTML in Korean mostly, images, PDFs, style sheets), then times `manage.py analyze --json`: the first run
analyses every page (inserts), later runs `--reanalyse` (rewrites every row); the median is printed, with
the peak memory of the analyzing process. The database is dropped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import statistics
import time
import uuid
import zlib
from datetime import UTC, datetime

from analyzer.synthetic import host_name, synthetic_pages
from bench.harness.db import fill_defaults, fresh_database, manage
from crawler.urlnorm import url_hash


def load_crawl(url: str, pages: int, hosts: int) -> tuple[float, int]:
    """COPY `pages` synthetic pages of `hosts` servers into the crawl's tables. Returns (seconds, body bytes)."""
    import psycopg2

    t0 = time.perf_counter()
    fetched = datetime(2001, 12, 1, tzinfo=UTC).isoformat()
    stored = 0
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no FK triggers during the load
        fill_defaults(cur, "crawladmin_server", {"id", "scheme", "host", "port"})
        fill_defaults(cur, "crawladmin_url", {"id", "url", "url_hash", "server_id", "state"})
        fill_defaults(
            cur, "crawladmin_page", {"id", "url_id", "body_z", "content_type", "size", "checksum", "fetched_at"}
        )
        servers = "".join(f"{h + 1}\thttp\t{host_name(h)}\t80\n" for h in range(hosts))
        cur.copy_expert("COPY crawladmin_server (id, scheme, host, port) FROM STDIN", io.StringIO(servers))
        chunk = 100_000
        urls, rows = [], []
        for i, (h, page_url, ctype, body) in enumerate(synthetic_pages(pages, hosts=hosts), start=1):
            body_z = zlib.compress(body, 6)
            stored += len(body_z)
            urls.append(f"{i}\t{page_url}\t{url_hash(page_url)}\t{h + 1}\tvisited\n")
            rows.append(
                f"{i}\t{i}\t\\\\x{body_z.hex()}\t{ctype}\t{len(body)}\t{hashlib.sha1(body).hexdigest()}\t{fetched}\n"
            )
            if len(rows) == chunk:
                _copy(cur, urls, rows)
                urls, rows = [], []
        _copy(cur, urls, rows)
        for table in ("crawladmin_server", "crawladmin_url", "crawladmin_page"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True  # VACUUM runs outside a transaction
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE crawladmin_server, crawladmin_url, crawladmin_page")
    finally:
        conn.close()
    return time.perf_counter() - t0, stored


def _copy(cur, urls: list[str], rows: list[str]) -> None:
    if not rows:
        return
    cur.copy_expert("COPY crawladmin_url (id, url, url_hash, server_id, state) FROM STDIN", io.StringIO("".join(urls)))
    cur.copy_expert(
        "COPY crawladmin_page (id, url_id, body_z, content_type, size, checksum, fetched_at) FROM STDIN",
        io.StringIO("".join(rows)),
    )


def _table_sizes(url: str) -> dict[str, int]:
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN"
            " ('crawladmin_page', 'analyzer_pageanalysis', 'analyzer_pagedomain', 'analyzer_domain')"
        )
        return dict(cur.fetchall())


def bench(pages: int, hosts: int, runs: int, batch_size: int) -> dict:
    with fresh_database("analyzer") as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "bench-analyzer-" + uuid.uuid4().hex * 2}
        t0 = time.perf_counter()
        manage(env, "migrate", "--verbosity", "0")
        migrate_s = time.perf_counter() - t0
        load_s, stored = load_crawl(url, pages, hosts)
        timings, report = [], None
        for k in range(runs):
            args = ["analyze", "--json", "--no-progress", "--batch-size", str(batch_size)]
            if k:
                args.append("--reanalyse")
            t0 = time.perf_counter()
            proc = manage(env, *args)
            wall = time.perf_counter() - t0
            report = json.loads(proc.stdout)
            timings.append(
                {
                    "wall_s": round(wall, 1),
                    "analyse_s": report["run"]["seconds"],
                    "analyzed": report["run"]["analyzed"],
                    "reanalyse": bool(k),
                }
            )
            t0 = time.perf_counter()
            manage(env, "analyze", "--json", "--report-only")
            timings[-1]["report_s"] = round(time.perf_counter() - t0, 1)
        sizes = _table_sizes(url)
    return {
        "pages": pages,
        "hosts": hosts,
        "batch_size": batch_size,
        "migrate_s": round(migrate_s, 1),
        "load_s": round(load_s, 1),
        "compressed_bodies_mb": round(stored / 1e6, 1),
        "runs": timings,
        # ru_maxrss of the largest child (the analyze processes), in KiB on Linux.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "table_mb": {name: round(size / 1e6, 1) for name, size in sizes.items()},
        "report": {k: report[k] for k in ("pages", "language_pages", "homepages")}
        | {"active_domains": {k: report["active_domains"][k] for k in ("total", "national", "foreign")}},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=1, help="First run analyses all pages; later ones --reanalyse")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON only")
    args = parser.parse_args(argv)
    r = bench(args.pages, args.hosts, args.runs, args.batch_size)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(
        f"{r['pages']:,} pages on {r['hosts']:,} hosts ({r['compressed_bodies_mb']} MB of compressed bodies); "
        f"migrate {r['migrate_s']} s, COPY load {r['load_s']} s"
    )
    for run in r["runs"]:
        kind = "manage.py analyze --reanalyse" if run["reanalyse"] else "manage.py analyze (all new)"
        print(
            f"  {kind:<32} {run['analyse_s']:8.1f} s analysing = {run['analyzed'] / run['analyse_s']:,.0f} pages/s "
            f"({run['wall_s']} s wall); report alone {run['report_s']} s"
        )
    median = statistics.median(run["analyse_s"] for run in r["runs"])
    print(
        f"  median {median:.1f} s = {r['pages'] / median:,.0f} pages/s over {len(r['runs'])} run(s); "
        f"peak RSS of the analyze process {r['peak_rss_mb']} MB"
    )
    print(f"  tables (MB): {r['table_mb']}")
    print(f"  report: {json.dumps(r['report'], ensure_ascii=False)}")


if __name__ == "__main__":
    main()
