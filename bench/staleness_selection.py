"""Benchmark: the active scan's staleness choice (seed 004, crawlcore.services.recrawl_choice) over 1,000,000
Visited URLs on PostgreSQL. Prints figures; asserts nothing. Target: under a second.

    python -m bench.staleness_selection [--urls 1000000] [--servers 1000] [--runs 7] [--limit 1000] [--json]

Creates a fresh database on the local PostgreSQL (127.0.0.1:5432, user postgres), migrates it with
`manage.py migrate`, loads with COPY: servers, each with a 24-hour load profile (monitoring), URLs all
Visited, last checked uniformly over the last 30 days (--age-days), Content-Length known for 80 %, a stored page (with
its size) for 70 %. Then times `sweep.active_candidates` — the two-step query the sweep runs — and the
same choice as one plain query without the age bound, checks both give the same ids, and drops the
database (also on failure).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from bench.harness.db import copy_lines, fill_defaults, fresh_database
from bench.harness.results import add_out_option, loadavg, write_results

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PG = os.environ.get("CRAWLADMIN_TEST_PG", "postgres://postgres@127.0.0.1:5432/postgres")
NULL = "\\N"  # COPY text format


def load(url: str, *, urls: int, servers: int, age_days: float, seed: int = 0) -> float:
    import psycopg2

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    server_of = rng.integers(1, servers + 1, urls)
    age_s = rng.uniform(0, age_days * 86400, urls)
    length = np.clip(rng.lognormal(np.log(20_000), 1.0, urls), 100, 10_000_000).astype(np.int64)
    has_length = rng.random(urls) < 0.8
    has_page = rng.random(urls) < 0.7
    page_size = np.clip(length * rng.uniform(0.8, 1.2, urls), 0, 2**31 - 1).astype(np.int64)
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no FK triggers during the load
        for table, given in (
            ("crawladmin_server", {"id", "scheme", "host", "port", "enabled", "load_profile"}),
            ("monitoring_servermonitor", {"server_id"}),
            ("crawladmin_url", {"id", "url", "url_hash", "server_id", "state", "last_checked_at", "content_length"}),
            ("crawladmin_page", {"id", "url_id", "size", "checksum", "fetched_at"}),
        ):
            fill_defaults(cur, table, given)
        base = rng.uniform(50, 2000, servers)
        swing = rng.uniform(0.0, 1.0, (servers, 24))
        profiles = (base[:, None] * (1 + 2 * swing)).round(1)
        copy_lines(
            cur,
            "COPY crawladmin_server (id, scheme, host, port, enabled, load_profile) FROM STDIN",
            (
                f"{i}\thttp\ts{i}.example\t80\ttrue\t{json.dumps(profiles[i - 1].tolist())}\n"
                for i in range(1, servers + 1)
            ),
        )
        copy_lines(
            cur,
            "COPY monitoring_servermonitor (server_id) FROM STDIN",
            (f"{i + 1}\n" for i in range(servers)),
        )
        cur.execute("SELECT now()")
        (now,) = cur.fetchone()
        stamp = [now.timestamp() - a for a in age_s.tolist()]
        copy_lines(
            cur,
            "COPY crawladmin_url (id, url, url_hash, server_id, state, last_checked_at, content_length) FROM STDIN",
            (
                f"{j + 1}\thttp://s{s}.example/p{j}\t{j + 1:024x}\t{s}\tvisited\t{_ts(t)}\t{n if k else NULL}\n"
                for j, (s, t, n, k) in enumerate(
                    zip(server_of.tolist(), stamp, length.tolist(), has_length.tolist(), strict=True)
                )
            ),
        )
        page_ids = np.flatnonzero(has_page)
        copy_lines(
            cur,
            "COPY crawladmin_page (id, url_id, size, checksum, fetched_at) FROM STDIN",
            (f"{i + 1}\t{j + 1}\t{page_size[j]}\tx\t{_ts(stamp[j])}\n" for i, j in enumerate(page_ids.tolist())),
        )
        for table in ("crawladmin_server", "crawladmin_url", "crawladmin_page"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True  # VACUUM runs outside a transaction
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE crawladmin_server, monitoring_servermonitor, crawladmin_url, crawladmin_page")
    finally:
        conn.close()
    return time.perf_counter() - t0


def _ts(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1e6):06d}+00"


def _median_time(fn, runs: int) -> tuple[float, list[float], object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, out


def measure(*, runs: int, limit: int, revisit_after: float) -> dict:
    """In this process, against DATABASE_URL (already set): time the sweep's choice."""
    import django

    django.setup()
    from django.conf import settings
    from django.db.models import F
    from django.utils import timezone

    from crawlcore.models import Url
    from crawlcore.services.recrawl_choice import staleness_scored
    from crawlcore.services.sweep import active_candidates

    settings.CRAWL_REVISIT_AFTER = revisit_after
    now = timezone.now()
    # The sweep's own filters (crawlcore.services.sweep), for the plain one-query version.
    eligible = Url.objects.filter(
        state="visited",
        last_checked_at__lte=now - timezone.timedelta(seconds=revisit_after),
        exclusion_reason="",
        server__enabled=True,
        server__excluded_reason="",
        lease_owner="",
        next_check_at__isnull=True,
    )

    def plain():
        scored = staleness_scored(eligible, now=now).order_by(F("staleness_score").desc(), "id")
        return list(scored.values_list("id", flat=True)[:limit])

    active_candidates(now=now, limit=limit)  # warm the connection and the cache once
    t_two, times_two, ids = _median_time(lambda: active_candidates(now=now, limit=limit), runs)
    t_plain, times_plain, ids_plain = _median_time(plain, max(1, min(runs, 3)))
    return {
        "limit": limit,
        "revisit_after_s": revisit_after,
        "eligible": eligible.count(),
        "median_s": round(t_two, 3),
        "runs_s": [round(t, 3) for t in times_two],
        "plain_query_median_s": round(t_plain, 3),
        "same_ids_as_plain_query": ids == ids_plain,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--limit", type=int, default=1000, help="m: CRAWL_ACTIVE_SCAN_CAPACITY")
    ap.add_argument("--age-days", type=float, default=30.0, help="last checks spread uniformly over this many days")
    ap.add_argument("--json", action="store_true")
    add_out_option(ap)
    ap.add_argument("--_measure", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    load_before = loadavg()
    if args._measure:  # the child: Django set up on the bench database
        out = [measure(runs=args.runs, limit=args.limit, revisit_after=r) for r in (86400.0, 0.0)]
        out.append(measure(runs=args.runs, limit=10 * args.limit, revisit_after=0.0))
        print(json.dumps(out))
        return
    try:
        import psycopg2

        psycopg2.connect(ADMIN_PG, connect_timeout=5).close()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it means: no PostgreSQL here
        print(f"PostgreSQL not reachable at {ADMIN_PG}: {exc}", file=sys.stderr)
        sys.exit(2)
    with fresh_database("stale") as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "bench-staleness-" + uuid.uuid4().hex * 2,
            "DJANGO_SETTINGS_MODULE": "crawladmin.settings",
        }
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, env=env, check=True, timeout=600
        )
        t_migrate = time.perf_counter() - t
        t_load = load(url, urls=args.urls, servers=args.servers, age_days=args.age_days)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.staleness_selection",
                "--_measure",
                "1",
                "--runs",
                str(args.runs),
                "--limit",
                str(args.limit),
            ],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        results = json.loads(proc.stdout.strip().splitlines()[-1])
    report = {
        "urls": args.urls,
        "servers": args.servers,
        "age_days": args.age_days,
        "migrate_s": round(t_migrate, 1),
        "load_s": round(t_load, 1),
        "selections": results,
    }
    load_after = loadavg()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report, args)
        print(f"load average before {load_before}, after {load_after} ({os.cpu_count()} cores)")
    write_results("staleness_selection", args, report, load_before=load_before, load_after=load_after, out=args.out)


def _print(report: dict, args: argparse.Namespace) -> None:
    results = report["selections"]
    print(
        f"staleness choice over {args.urls:,} Visited URLs on {args.servers} servers, last checked over "
        f"{args.age_days:g} days, PostgreSQL "
        f"(migrate {report['migrate_s']} s, COPY load {report['load_s']} s)"
    )
    for r in results:
        print(
            f"  m = {r['limit']:>6}, CRAWL_REVISIT_AFTER = {r['revisit_after_s']:>7.0f} s "
            f"({r['eligible']:,} eligible): "
            f"median {r['median_s']:.3f} s of {len(r['runs_s'])} runs {r['runs_s']}; "
            f"one plain query {r['plain_query_median_s']:.3f} s; same ids: {r['same_ids_as_plain_query']}"
        )


if __name__ == "__main__":
    main()
