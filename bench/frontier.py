"""Benchmark: the frontier at scale on PostgreSQL. Prints figures; asserts nothing.

    python -m bench.frontier [--urls 1000000] [--servers 1000] [--claims 50] [--claim-size 1000]
                             [--links 100000] [--link-runs 3] [--known-share 0.5] [--procs 1] [--json]

Creates a fresh database on the local PostgreSQL (bench.harness.db), migrates it, and loads with COPY a frontier
of --urls Init URLs, all due, spread evenly over --servers servers (depth 0–4), plus the pages that will
yield the discovered links; VACUUM ANALYZE. Then, in a child process with Django on that database:

- claim: `crawlcore.services.urls.urls_claim` leases --claim-size due URLs of one server, --claims times
  (each on another server, after one warm-up claim): median, p95, max, and the time of each of its SQL
  statements. Target: p95 under 50 ms. When missed, EXPLAIN (ANALYZE, BUFFERS) of its slowest statement
  (in a transaction rolled back) is printed: the plan shows which index it lacks.
- links: `crawlcore.services.extract.pages_extract` — the extract agent's own service — on stored pages of
  30 links each (80 % to the page's server, --known-share of them to URLs already in the frontier, the rest
  new), in groups of 20 pages (EXTRACT_GROUP), until --links links are stored; --link-runs
  times, each on fresh pages, whose extract message is taken as sent just before the run (as the load agent
  stores a page). The parsing is timed alone on the same bodies (crawler.parse.extract) and
  subtracted: what remains is inserting URLs and links (and the dispatch of servers with new work).
- with --procs N, the same pages through N extract processes at once, each taking every N-th group, as a
  worker machine's extract processes (one per core) share a crawl: the links a second they bring together,
  parsing included (it runs beside the writing on the same cores), which is what one PostgreSQL carries
  from several extract processes rather than what one process can send it.

Drops the database afterwards, also on failure. Also called by bench.throughput (`run()`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path

from bench.harness.db import copy_lines, fill_defaults, fresh_database, manage
from crawler.urlnorm import canonical_cache_clear, url_hash

ROOT = Path(__file__).resolve().parent.parent
CLAIM_TARGET_MS = 50.0
LINKS_PER_PAGE = 30
ONSITE = 24  # of the 30
# Pages per extract message. The load agent now sends up to 40 (crawlcore.services.load.EXTRACT_GROUP; a round of
# CRAWL_BATCH_SIZE 25 URLs in one message): 20, what it sent until be12932, keeps the figures since then
# comparable with the earlier ones and errs low (a larger group spreads a batch's fixed cost over more links).
EXTRACT_GROUP = 20


def _known_url(i: int, servers: int) -> str:
    return f"http://s{1 + i % servers}.example/p{i}"


def _page_body(rng: random.Random, run: int, k: int, server: int, *, urls: int, servers: int, known: float) -> bytes:
    links = []
    for j in range(LINKS_PER_PAGE):
        s = server if j < ONSITE else 1 + rng.randrange(servers)
        if rng.random() < known:
            i = rng.randrange(urls // servers) * servers + (s - 1)  # a frontier URL of server s
            links.append(_known_url(i, servers) if i < urls else f"http://s{s}.example/")
        else:
            links.append(f"http://s{s}.example/n/{run}/{k}/{j}")
    anchors = "\n".join(f'<p>text {j} <a href="{u}">link {j}</a></p>' for j, u in enumerate(links))
    return f"<html><head><title>page {run}/{k}</title></head><body>\n{anchors}\n</body></html>\n".encode()


def load(db: str, *, urls: int, servers: int, link_pages: int, link_runs: int, known: float, seed: int = 0) -> dict:
    """COPY the frontier and the pages to extract; returns seconds and the page ids of each link run."""
    import psycopg2

    t0 = time.perf_counter()
    rng = random.Random(seed)
    with psycopg2.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no FK triggers during the load
        for table, given in (
            ("crawladmin_server", {"id", "scheme", "host", "port", "enabled"}),
            (
                "crawladmin_url",
                {"id", "url", "url_hash", "server_id", "state", "depth", "next_check_at", "scope_mode", "scope_root"},
            ),
            ("crawladmin_page", {"id", "url_id", "body_z", "content_type", "size", "checksum", "fetched_at"}),
        ):
            fill_defaults(cur, table, given)
        copy_lines(
            cur,
            "COPY crawladmin_server (id, scheme, host, port, enabled) FROM STDIN",
            (f"{i}\thttp\ts{i}.example\t80\ttrue\n" for i in range(1, servers + 1)),
        )
        due = "2020-01-01 00:00:00+00"

        def url_line(i: int, url: str, server: int, state: str, depth: int) -> str:
            return f"{i + 1}\t{url}\t{url_hash(url)}\t{server}\t{state}\t{depth}\t{due}\tany\ts{server}.example\n"

        cols = "id, url, url_hash, server_id, state, depth, next_check_at, scope_mode, scope_root"
        copy_lines(
            cur,
            f"COPY crawladmin_url ({cols}) FROM STDIN",
            (url_line(i, _known_url(i, servers), 1 + i % servers, "init", i * 7 % 5) for i in range(urls)),
        )
        # The pages the link runs extract: each on a Visited URL of its own (not in the frontier count).
        parents, pages = [], []
        for run in range(link_runs):
            for k in range(link_pages):
                i = urls + run * link_pages + k
                server = 1 + rng.randrange(servers)
                parents.append(url_line(i, f"http://s{server}.example/v/{run}/{k}", server, "visited", 1))
                body = _page_body(rng, run, k, server, urls=urls, servers=servers, known=known)
                page_id = run * link_pages + k + 1
                pages.append(
                    f"{page_id}\t{i + 1}\t\\\\x{zlib.compress(body, 6).hex()}\ttext/html\t{len(body)}"
                    f"\t{hashlib.sha1(body).hexdigest()}\t{due}\n"
                )
        copy_lines(cur, f"COPY crawladmin_url ({cols}) FROM STDIN", parents)
        copy_lines(
            cur,
            "COPY crawladmin_page (id, url_id, body_z, content_type, size, checksum, fetched_at) FROM STDIN",
            pages,
        )
        for table in ("crawladmin_server", "crawladmin_url", "crawladmin_page"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn = psycopg2.connect(db)
    try:
        conn.autocommit = True  # VACUUM runs outside a transaction
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE crawladmin_server, crawladmin_url, crawladmin_page, crawladmin_link")
    finally:
        conn.close()
    runs = [list(range(r * link_pages + 1, (r + 1) * link_pages + 1)) for r in range(link_runs)]
    return {"seconds": round(time.perf_counter() - t0, 1), "page_ids": runs}


# --------------------------------------------------------------------------------------------------
# The child: Django on the benchmark database


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def _explain_claim(server_id: int, size: int) -> list[dict]:
    """Replay one claim statement by statement under EXPLAIN (ANALYZE, BUFFERS), in a transaction rolled
    back (EXPLAIN ANALYZE runs an UPDATE for real): each statement's plan, the slowest first."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from crawlcore.services.urls import urls_claim

    with transaction.atomic(), CaptureQueriesContext(connection) as q:
        urls_claim(server_id=server_id, owner="bench-explain", limit=size)
        transaction.set_rollback(True)
    statements = [x["sql"] for x in q.captured_queries if not x["sql"].startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))]
    plans = []
    with transaction.atomic(), connection.cursor() as cur:
        for sql in statements:
            t = time.perf_counter()
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plans.append((time.perf_counter() - t, sql, "\n".join(row[0] for row in cur.fetchall())))
        transaction.set_rollback(True)
    return [{"sql": sql, "plan": plan, "ms": round(1000 * t, 1)} for t, sql, plan in sorted(plans, reverse=True)]


def measure_claims(*, servers: int, claims: int, size: int, seed: int = 1) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crawlcore.services.urls import urls_claim, urls_release

    order = random.Random(seed).sample(range(1, servers + 1), min(servers, claims + 2))
    urls_claim(server_id=order[0], owner="bench-warmup", limit=size)
    times, got, statements = [], [], []
    for n, server_id in enumerate(order[1 : claims + 1]):
        with CaptureQueriesContext(connection) as q:
            t = time.perf_counter()
            claimed = urls_claim(server_id=server_id, owner=f"bench-{n}", limit=size)
            times.append(1000 * (time.perf_counter() - t))
        got.append(len(claimed))
        # A crawl's leases are short-lived (the load agent clears each as it moves the URL on): give these
        # back, so leased rows do not pile up as no crawl would let them.
        urls_release(ids=[u.id for u in claimed], owner=f"bench-{n}")
        statements.append([(x["sql"], 1000 * float(x["time"])) for x in q.captured_queries])
    # The statements of one claim, each with its median time over the claims (same statements each time).
    per_statement = []
    for i in range(min(len(s) for s in statements)):
        per_statement.append(
            {
                "sql": " ".join(statements[0][i][0].split())[:300],
                "median_ms": round(statistics.median(s[i][1] for s in statements), 2),
            }
        )
    out = {
        "claims": len(times),
        "size": size,
        "claimed_median": statistics.median(got),
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(_pct(times, 95), 2),
        "max_ms": round(max(times), 2),
        "statements": per_statement,
        "target_ms": CLAIM_TARGET_MS,
    }
    if out["p95_ms"] >= CLAIM_TARGET_MS and len(order) > claims + 1:
        out["explain"] = _explain_claim(order[-1], size)  # a server not claimed yet: a real claim's plans
    return out


def parse_alone(pages: list) -> float:
    """Seconds to parse the stored pages (crawler.parse.extract) from a cold start: the cache of canonical
    URLs emptied first. Timed after pages_extract on a warm cache, the same parse once looked four times
    cheaper than it is in a run of 20,000 links, and the difference was counted as writing (a run of more
    distinct URLs than the cache holds, 100,000 by default, was timed cold either way)."""
    from crawler.parse import extract

    canonical_cache_clear()
    t = time.perf_counter()
    for page in pages:
        extract(page.body, page.url.url, content_type=page.content_type or None)
    return time.perf_counter() - t


def measure_links(*, page_runs: list[list[int]]) -> list[dict]:
    from django.utils import timezone

    from crawlcore.models import Link, Page
    from crawlcore.services.extract import pages_extract

    results = []
    for ids in page_runs:
        # As the load agent leaves them: stored with the time their extract message was sent (just now), so
        # the extract agent does not take the batch for one that waited in the queue (and mark it alive).
        Page.objects.filter(id__in=ids).update(extract_dispatched_at=timezone.now())
        links0 = Link.objects.count()
        # The parsing alone, on the same bodies: what pages_extract spends before it writes. Each timing starts
        # with no URL canonicalised yet (parse_alone; the extract run too), so neither finds the other's
        # links in the worker's cache of canonical URLs.
        parse = parse_alone(list(Page.objects.filter(id__in=ids).select_related("url")))
        canonical_cache_clear()
        t = time.perf_counter()
        stored = new = 0
        groups = []
        for i in range(0, len(ids), EXTRACT_GROUP):
            g = time.perf_counter()
            outcome = pages_extract(page_ids=ids[i : i + EXTRACT_GROUP])
            groups.append(1000 * (time.perf_counter() - g))
            stored += outcome.links
            new += outcome.new_urls
        total = time.perf_counter() - t
        results.append(
            {
                "pages": len(ids),
                "links_stored": Link.objects.count() - links0,
                "links_reported": stored,
                "urls_offered": new,
                "extract_s": round(total, 2),
                "parse_s": round(parse, 2),
                "insert_s": round(total - parse, 2),
                "group_median_ms": round(statistics.median(groups), 1),
            }
        )
    return results


def _extract_share(spec_file: str) -> None:
    """One of --procs extract processes: its share of a run's groups of pages, from a start time shared
    with the others; prints its links and its own start and end."""
    import django

    django.setup()
    from crawlcore.services.extract import pages_extract

    spec = json.loads(Path(spec_file).read_text())
    pause = spec["start"] - time.time()
    if pause > 0:
        time.sleep(pause)
    start = time.time()
    stored = 0
    for group in spec["groups"]:
        stored += pages_extract(page_ids=group).links
    print(json.dumps({"links": stored, "start": start, "end": time.time()}))


def measure_links_together(*, page_runs: list[list[int]], procs: int) -> list[dict]:
    """Like measure_links, with `procs` extract processes at once on one run's pages, each taking every
    procs-th group of 20, as a worker machine's extract processes share a crawl (one per core). Their
    parsing runs beside their writing on the same cores, so it is not subtracted: what is measured is the
    links a second the processes together bring through parsing and writing, from the first start to the last
    end. The same run's parse alone, for comparison, is timed as in measure_links."""
    from django.db import connections
    from django.utils import timezone

    from crawlcore.models import Link, Page

    results = []
    for ids in page_runs:
        Page.objects.filter(id__in=ids).update(extract_dispatched_at=timezone.now())
        links0 = Link.objects.count()
        parse = parse_alone(list(Page.objects.filter(id__in=ids).select_related("url")))
        connections.close_all()
        groups = [ids[i : i + EXTRACT_GROUP] for i in range(0, len(ids), EXTRACT_GROUP)]
        start = time.time() + 3  # the children's Django set up first
        files, children = [], []
        try:
            for k in range(procs):
                spec = Path(f"/tmp/bench-frontier-share-{uuid.uuid4().hex}.json")
                spec.write_text(json.dumps({"start": start, "groups": groups[k::procs]}))
                files.append(spec)
                children.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "bench.frontier", "--_extract", str(spec)],
                        cwd=ROOT,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
            shares = []
            for child in children:
                out, err = child.communicate(timeout=3600)
                if child.returncode:
                    raise RuntimeError(f"an extract process failed:\n{err[-3000:]}")
                shares.append(json.loads(out.strip().splitlines()[-1]))
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            for spec in files:
                spec.unlink(missing_ok=True)
        wall = max(x["end"] for x in shares) - min(x["start"] for x in shares)
        results.append(
            {
                "pages": len(ids),
                "procs": procs,
                "links_stored": Link.objects.count() - links0,
                "links_reported": sum(x["links"] for x in shares),
                "extract_s": round(wall, 2),
                "parse_s": round(parse, 2),
            }
        )
    return results


def _child(args: argparse.Namespace) -> None:
    import django

    django.setup()
    page_runs = json.loads(Path(args._child).read_text())
    claim = measure_claims(servers=args.servers, claims=args.claims, size=args.claim_size)
    if args.procs > 1:
        links = measure_links_together(page_runs=page_runs, procs=args.procs)
    else:
        links = measure_links(page_runs=page_runs)
    print(json.dumps({"claim": claim, "links": links}))


# --------------------------------------------------------------------------------------------------


def run(
    *,
    urls: int = 1_000_000,
    servers: int = 1000,
    claims: int = 50,
    claim_size: int = 1000,
    links: int = 100_000,
    link_runs: int = 3,
    known_share: float = 0.5,
    procs: int = 1,
) -> dict:
    """Build the frontier in a fresh database, measure in a child process, drop the database."""
    link_pages = -(-links // LINKS_PER_PAGE)
    with fresh_database("frontier") as db:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_"))},
            "DATABASE_URL": db,
            "DJANGO_SECRET_KEY": "bench-frontier-" + uuid.uuid4().hex * 2,
            "DJANGO_SETTINGS_MODULE": "crawladmin.settings",
            "CRAWL_ALLOW_PRIVATE": "",
        }
        t = time.perf_counter()
        manage(env, "migrate", "--noinput")
        migrate_s = time.perf_counter() - t
        loaded = load(db, urls=urls, servers=servers, link_pages=link_pages, link_runs=link_runs, known=known_share)
        ids_file = Path(f"/tmp/bench-frontier-{uuid.uuid4().hex}.json")
        ids_file.write_text(json.dumps(loaded["page_ids"]))
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "bench.frontier", "--_child", str(ids_file), "--servers", str(servers)]
                + ["--claims", str(claims), "--claim-size", str(claim_size), "--procs", str(procs)],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=3600,
            )
        finally:
            ids_file.unlink(missing_ok=True)
        if proc.returncode:
            raise RuntimeError(f"bench.frontier measuring failed:\n{proc.stderr[-3000:]}")
        measured = json.loads(proc.stdout.strip().splitlines()[-1])
    link_runs_out = measured["links"]
    links = {
        "runs": link_runs_out,
        "links_per_run": statistics.median(r["links_stored"] for r in link_runs_out),
        "extract_s_median": statistics.median(r["extract_s"] for r in link_runs_out),
        "known_share": known_share,
    }
    if procs > 1:
        links["procs"] = procs  # parsing included: no writing time apart
    else:
        links["insert_s_median"] = statistics.median(r["insert_s"] for r in link_runs_out)
    return {
        "urls": urls,
        "servers": servers,
        "migrate_s": round(migrate_s, 1),
        "load_s": loaded["seconds"],
        "claim": measured["claim"],
        "links": links,
    }


def _short(text: str, width: int = 200) -> str:
    """Long id lists (IN (…), = ANY ('{…}')) cut to their start."""
    return text if len(text) <= width else text[: width - 1] + "…"


def print_report(r: dict) -> None:
    c, li = r["claim"], r["links"]
    ok = "meets" if c["p95_ms"] < c["target_ms"] else "MISSES"
    print(
        f"frontier: {r['urls']:,} due Init URLs on {r['servers']:,} servers (migrate {r['migrate_s']} s, "
        f"COPY load {r['load_s']} s)"
    )
    print(
        f"  claim {c['size']:,} due URLs of one server (urls_claim), {c['claims']} claims, {c['claimed_median']:.0f}"
        f" claimed each: median {c['median_ms']:.1f} ms, p95 {c['p95_ms']:.1f} ms, max {c['max_ms']:.1f} ms "
        f"— {ok} the p95 < {c['target_ms']:.0f} ms target"
    )
    for s in c["statements"]:
        print(f"    {s['median_ms']:8.2f} ms  {s['sql'][:150]}")
    if "explain" in c:
        print("  EXPLAIN (ANALYZE, BUFFERS) of the claim's statements, the slowest first:")
        for e in c["explain"]:
            print(f"    -- {e['ms']} ms: " + _short(" ".join(e["sql"].split())))
            for line in e["plan"].splitlines():
                print("    " + _short(line))
    runs = li["runs"]
    if li.get("procs", 1) > 1:
        print(
            f"  extract {li['links_per_run']:,.0f} discovered links with {li['procs']} extract processes at once "
            f"({runs[0]['pages']:,} pages × {LINKS_PER_PAGE} links, {li['known_share']:.0%} to known URLs, groups of "
            f"{EXTRACT_GROUP} pages shared out), parsing and writing together: median {li['extract_s_median']:.1f} s "
            f"({li['links_per_run'] / li['extract_s_median']:,.0f} links/s); runs: "
            + "; ".join(
                f"{x['extract_s']} s (one process's parse alone {x['parse_s']} s), {x['links_stored']:,} links"
                for x in runs
            )  # fmt: skip
        )
        return
    print(
        f"  insert {li['links_per_run']:,.0f} discovered links through pages_extract "
        f"({runs[0]['pages']:,} pages × {LINKS_PER_PAGE} links, {li['known_share']:.0%} to known URLs, groups of "
        f"{EXTRACT_GROUP} pages): median {li['insert_s_median']:.1f} s of writing "
        f"({li['links_per_run'] / li['insert_s_median']:,.0f} links/s) + parsing, in all "
        f"{li['extract_s_median']:.1f} s; runs: "
        + "; ".join(f"{x['insert_s']} s + parse {x['parse_s']} s, {x['links_stored']:,} links" for x in runs)
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--claims", type=int, default=50)
    ap.add_argument("--claim-size", type=int, default=1000)
    ap.add_argument("--links", type=int, default=100_000)
    ap.add_argument("--link-runs", type=int, default=3)
    ap.add_argument("--known-share", type=float, default=0.5, help="share of links to URLs already known")
    ap.add_argument(
        "--procs",
        type=int,
        default=1,
        help="extract processes at once (default 1: one process, its parse timed apart and subtracted)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    ap.add_argument("--_extract", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.procs < 1:
        ap.error("--procs: at least 1")
    if args._extract:
        _extract_share(args._extract)
        return
    if args._child:
        _child(args)
        return
    r = run(
        urls=args.urls,
        servers=args.servers,
        claims=args.claims,
        claim_size=args.claim_size,
        links=args.links,
        link_runs=args.link_runs,
        known_share=args.known_share,
        procs=args.procs,
    )
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print_report(r)


if __name__ == "__main__":
    main()
