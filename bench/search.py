"""Benchmark: the full-text index on PostgreSQL. Prints figures; asserts nothing.

    python -m bench.search                       # 100,000 pages, 300 queries
    python -m bench.search --pages 20000 --queries 100

Creates a fresh database on 127.0.0.1:5432 (CRAWLADMIN_TEST_PG overrides), migrates it, COPYs synthetic
pages into it (analyzer.synthetic: small HTML pages in Korean, English, Japanese, Chinese, German, images,
PDFs; bench.analyzer.load_crawl), then in one `manage.py shell`:

- build: the extract agent (crawlcore.services.extract.pages_extract) over every page, in batches of 40 as
  the load agent sends them, batches alternating between indexing on and off (SEARCH_INDEX), so both halves
  see the same data and the same growing tables: the agent's CPU per page (this process) and wall time per
  page with and without the index, and the build time per 100,000 pages;
- size: the GIN index and the tsvector column, per 100,000 pages;
- queries: `search.selectors.search_pages` (limit 20, with snippets) for words of the synthetic pages in
  every language, one and two words: p50, p95, max.

The database is dropped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

from bench.analyzer import load_crawl
from bench.harness.db import fresh_database, manage

SCRIPT = r"""
import json, random, statistics, time
from django.conf import settings
from django.db import connection
from crawlcore.models import Page
from crawlcore.services import extract as extract_module
from crawlcore.services.extract import pages_extract
from search.selectors import search_pages

extract_module.servers_dispatch_with_due_work = lambda **kw: 0  # no broker in the benchmark
ids = list(Page.objects.filter(extracted_at__isnull=True).order_by("id").values_list("id", flat=True))
cpu = {True: 0.0, False: 0.0}
wall = {True: 0.0, False: 0.0}
pages = {True: 0, False: 0}
for n, start in enumerate(range(0, len(ids), 40)):
    on = n % 2 == 0
    settings.SEARCH_INDEX = on
    batch = ids[start : start + 40]
    c0, w0 = time.process_time(), time.perf_counter()
    pages_extract(page_ids=batch)
    cpu[on] += time.process_time() - c0
    wall[on] += time.perf_counter() - w0
    pages[on] += len(batch)
settings.SEARCH_INDEX = True
with connection.cursor() as cur:
    cur.execute("SELECT pg_relation_size('page_search_idx'), coalesce(sum(pg_column_size(search_vector)), 0), "
                "count(*) FILTER (WHERE search_vector IS NOT NULL AND search_vector <> ''::tsvector) "
                "FROM crawladmin_page")
    index_bytes, vector_bytes, indexed = cur.fetchone()
words = ["library", "semester", "network", "robot", "privacy", "weather", "도서관", "학기", "연구실", "서비스",
         "図書館", "研究室", "ネットワーク", "图书馆", "Bibliothek", "Rechenzentrum", "library weekends",
         "network mail", "수강 신청", "公園 人"]
rng = random.Random(7)
times = []
hits = 0
for _ in range(QUERIES):
    q = rng.choice(words)
    t0 = time.perf_counter()
    hits += len(search_pages(query=q, limit=20))
    times.append((time.perf_counter() - t0) * 1000)
times.sort()
def per_page(spent):
    return {"on": 1000 * spent[True] / max(pages[True], 1), "off": 1000 * spent[False] / max(pages[False], 1)}

print(json.dumps({
    "cpu_ms_per_page": per_page(cpu),
    "wall_ms_per_page": per_page(wall),
    "pages": pages, "indexed": indexed, "index_bytes": index_bytes, "vector_bytes": vector_bytes,
    "query_ms": {"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95) - 1], "max": times[-1]},
    "hits": hits,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with fresh_database(f"search_{uuid.uuid4().hex[:6]}") as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "bench-key-" * 6, "CRAWL_ALLOW_PRIVATE": ""}
        manage(env, "migrate", "--verbosity", "0")
        load_seconds, _ = load_crawl(url, args.pages, args.hosts)
        t0 = time.perf_counter()
        out = manage(env, "shell", "-c", SCRIPT.replace("QUERIES", str(args.queries)), timeout=24 * 3600)
        total = time.perf_counter() - t0
    got = json.loads(out.stdout.strip().splitlines()[-1])
    per_100k = 100_000 / max(got["pages"]["true"], 1)  # only the batches with the index on wrote one
    cpu, wall = got["cpu_ms_per_page"], got["wall_ms_per_page"]
    print(f"pages: {args.pages:,} ({args.hosts:,} hosts), loaded in {load_seconds:.1f} s; indexed: {got['indexed']:,}")
    print(f"extract agent CPU per page: index on {cpu['on']:.3f} ms, off {cpu['off']:.3f} ms "
          f"({cpu['on'] / max(cpu['off'], 1e-9):.2f}x)")  # fmt: skip
    print(f"extract wall per page:      index on {wall['on']:.3f} ms, off {wall['off']:.3f} ms "
          f"({wall['on'] / max(wall['off'], 1e-9):.2f}x)")  # fmt: skip
    build = wall["on"] * 100_000 / 1000
    print(f"index build (extraction with the index, per 100k pages): {build:.0f} s")
    print(f"index size per 100k pages indexed: GIN {got['index_bytes'] * per_100k / 2**20:.1f} MiB, "
          f"tsvector column {got['vector_bytes'] * per_100k / 2**20:.1f} MiB")  # fmt: skip
    q = got["query_ms"]
    print(f"queries ({args.queries}, limit 20, snippets): p50 {q['p50']:.1f} ms, p95 {q['p95']:.1f} ms, "
          f"max {q['max']:.1f} ms; {got['hits']:,} hits shown")  # fmt: skip
    print(f"(shell total {total:.0f} s)")
    print(json.dumps(got))


if __name__ == "__main__":
    main()
