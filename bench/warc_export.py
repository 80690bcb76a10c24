"""Benchmark: `manage.py export_warc` of a generated crawl of 50,000 pages in a fresh PostgreSQL database.
Prints figures; asserts nothing.

    python -m bench.warc_export                    # 50,000 pages on 200 hosts
    python -m bench.warc_export --pages 5000       # a smaller crawl: the peak RSS should not move

Creates a database on 127.0.0.1:5432 (user postgres; CRAWLADMIN_TEST_PG overrides), migrates it, and loads
with COPY a crawl as the load agent leaves it (analyzer.synthetic's bodies, ~10 KB of HTML a page; the
request and response heads; every 10th page a duplicate of an earlier one, every 20th with a revisit; 8
outlinks a page). Then times `manage.py export_warc` in a child process: WARC bytes written per second,
records per second, the child's peak RSS. The database and the files are removed at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from analyzer.synthetic import host_name, synthetic_pages
from bench.harness.db import ROOT, copy_lines, fill_defaults, fresh_database, manage
from bench.harness.proc import wait_with_peak
from crawler.urlnorm import url_hash

FETCHED = datetime(2026, 11, 1, tzinfo=UTC)
# COPY text format: a backslash-r backslash-n in a column is CR LF, backslash-N is NULL.
CRLF = "\\r\\n"
NULL = "\\N"
REQUEST = CRLF.join(["GET {path} HTTP/1.1", "Host: {host}", "User-Agent: crawladmin/0.1", "Accept-Encoding: gzip"])
RESPONSE = CRLF.join(
    ["HTTP/1.1 200 OK", "Date: Sun, 01 Nov 2026 00:00:00 GMT", "Server: nginx", "Content-Type: {ctype}",
     "Content-Encoding: gzip", 'ETag: "{etag}"', "Connection: keep-alive"]
)  # fmt: skip
PAD = 10_000  # bytes of HTML a page: a small real page, not analyzer.synthetic's few hundred bytes


def load_crawl(url: str, pages: int, hosts: int) -> dict:
    """COPY the crawl into the tables; what was loaded."""
    import psycopg2

    body_bytes = 0
    firsts: dict[str, int] = {}
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")
        fill_defaults(cur, "crawladmin_server", {"id", "scheme", "host", "port"})
        fill_defaults(cur, "crawladmin_url", {"id", "url", "url_hash", "server_id", "state"})
        fill_defaults(cur, "crawladmin_page", set(_PAGE_ORDER))
        copy_lines(cur, "COPY crawladmin_server (id, scheme, host, port) FROM STDIN",
                   (f"{h + 1}\thttp\t{host_name(h)}\t80\n" for h in range(hosts)))  # fmt: skip
        urls, rows = [], []
        last_body = b""
        for i, (h, page_url, ctype, body) in enumerate(synthetic_pages(pages, hosts=hosts), start=1):
            if ctype.startswith("text/html"):
                body = body + b"<p>" + body * (PAD // max(len(body), 1)) + b"</p>"
            if i % 10 == 0 and last_body:
                body = last_body  # a duplicate of the page before
            last_body = body
            checksum = hashlib.sha1(body).hexdigest()
            duplicate = firsts.setdefault(checksum, i)
            body_bytes += len(body)
            path = "/" + page_url.split("/", 3)[3] if page_url.count("/") >= 3 else "/"
            host = host_name(h)
            fetched = FETCHED + timedelta(seconds=i)
            revisit = FETCHED + timedelta(days=1, seconds=i) if i % 20 == 0 else None
            head_q = REQUEST.format(path=path, host=host)
            head_r = RESPONSE.format(ctype=ctype, etag=checksum[:16])
            urls.append(f"{i}\t{page_url}\t{url_hash(page_url)}\t{h + 1}\tvisited\n")
            body_z = zlib.compress(body, 6).hex()
            again = (revisit.isoformat(), head_q, head_r) if revisit else (NULL, "", "")
            row = (i, i, f"\\\\x{body_z}", ctype, len(body), checksum, fetched.isoformat(), head_q, head_r, *again,
                   duplicate if duplicate != i else NULL)  # fmt: skip
            rows.append("\t".join(map(str, row)) + "\n")
        copy_lines(cur, "COPY crawladmin_url (id, url, url_hash, server_id, state) FROM STDIN", urls)
        copy_lines(cur, f"COPY crawladmin_page ({', '.join(_PAGE_ORDER)}) FROM STDIN", rows)
        links = (f"{i}\t{(i * 7 + k * 131) % pages + 1}\n" for i in range(1, pages + 1) for k in range(8))
        copy_lines(cur, "COPY crawladmin_link (from_url_id, to_url_id) FROM STDIN", links)
        for table in ("crawladmin_server", "crawladmin_url", "crawladmin_page", "crawladmin_link"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE crawladmin_url, crawladmin_page, crawladmin_link")
    finally:
        conn.close()
    duplicates = pages - len(firsts)
    return {"pages": pages, "hosts": hosts, "body_mb": round(body_bytes / 1e6, 1), "duplicates": duplicates}


_PAGE_ORDER = (
    "id", "url_id", "body_z", "content_type", "size", "checksum", "fetched_at", "request_head", "response_head",
    "revisit_at", "revisit_request_head", "revisit_response_head", "duplicate_of_id",
)  # fmt: skip


def _run_measured(env: dict, args: list[str]) -> tuple[str, int]:
    """Run `manage.py args` and return its stdout and its own peak RSS in KiB (harness.proc.wait_with_peak:
    wait4's ru_maxrss would count this process's own size, which the loaded crawl made large)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=out, stderr=err)
        proc.returncode, peak = wait_with_peak(proc.pid)
        out.seek(0), err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{err.read()[-3000:]}")
        return out.read(), peak // 1024


def bench(pages: int, hosts: int, max_size: str | None) -> dict:
    with fresh_database("warc") as url, tempfile.TemporaryDirectory(prefix="warc-bench-") as tmp:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "bench-warc-" + uuid.uuid4().hex * 2}
        manage(env, "migrate", "--verbosity", "0")
        t0 = time.perf_counter()
        loaded = load_crawl(url, pages, hosts)
        load_s = time.perf_counter() - t0
        out = Path(tmp) / "crawl.warc.gz"
        args = ["export_warc", str(out), "--no-progress"] + (["--max-size", max_size] if max_size else [])
        t0 = time.perf_counter()
        stdout, rss_kib = _run_measured(env, args)
        wall = time.perf_counter() - t0
        records = int(re.search(r"(\d+) records", stdout).group(1))
        written = sum(p.stat().st_size for p in Path(tmp).glob("crawl*.warc.gz"))
        files = len(list(Path(tmp).glob("crawl*.warc.gz")))
        index_lines = sum(1 for _ in (Path(tmp) / "crawl.cdxj").open())
    return loaded | {
        "load_s": round(load_s, 1),
        "export_s": round(wall, 2),
        "records": records,
        "warc_mb": round(written / 1e6, 1),
        "files": files,
        "index_lines": index_lines,
        "mb_per_s": round(written / 1e6 / wall, 2),
        "payload_mb_per_s": round(loaded["body_mb"] / wall, 2),
        "records_per_s": round(records / wall),
        "pages_per_s": round(pages / wall),
        "peak_rss_mb": round(rss_kib / 1024, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--max-size", help="also roll over at this size (e.g. 100M)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    r = bench(args.pages, args.hosts, args.max_size)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(
        f"{r['pages']:,} pages on {r['hosts']} hosts ({r['body_mb']} MB of bodies, {r['duplicates']:,} duplicates), "
        f"COPY load {r['load_s']} s"
    )
    print(
        f"  export_warc: {r['export_s']} s wall = {r['mb_per_s']} MB/s of WARC ({r['warc_mb']} MB in {r['files']} "
        f"file(s); {r['payload_mb_per_s']} MB/s of payload), {r['records_per_s']:,} records/s ({r['records']:,} "
        f"records, {r['index_lines']:,} index lines), {r['pages_per_s']:,} pages/s; peak RSS {r['peak_rss_mb']} MB"
    )


if __name__ == "__main__":
    main()
