"""Benchmark: the fetch side alone — the thread-per-exchange Fetcher and the shared engine, against what
libcurl's multi interface itself costs on the same exchanges. Prints figures; asserts nothing.

    python -m bench.fetch_engine [--servers 20] [--pages 200] [--threads 40] [--port 18726] [--rounds 1]

A generated web (testweb.generated, ~10 KB pages) served by our own nginx on 127.0.1.1 …; then, for each
fetcher, `threads` threads fetch every page, each thread one server's share in order (as a load worker's
threads each work one server's batch), under the private-address guard with loopback allowed. CPU is this
process's (user + system, every thread: for the engine, its own thread and the callers'); nginx is another
process and not counted. What it shows is the HTTP client's cost per page, without the database.

"libcurl" is the floor: one pycurl multi handle driven by ``perform``/``select`` in one thread, one easy
handle per list of URLs (as many transfers in flight as the others have threads), keep-alive, the body
written into a BytesIO; no phase deadlines, no address guard, no header parsing, no result objects. What
the engine costs above it is the Python around each exchange (and the guarantees it buys).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from crawler.engine import EngineFetcher, shared_engine
from crawler.fetch import Fetcher
from crawler.http import FetchPolicy
from crawler.netguard import forbidden_reason, parse_cidrs
from testweb.generated import NginxWeb, Web, WebSpec, ensure_written


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def run(kind: str, urls_by_thread: list[list[str]], policy: FetchPolicy) -> tuple[float, float, int, int]:
    allowed = parse_cidrs("127.0.0.0/8")

    def guard(ip: str) -> str | None:
        return forbidden_reason(ip, allowed)

    failures = 0
    done = 0
    lock = threading.Lock()

    def work(urls: list[str]) -> None:
        nonlocal failures, done
        fetcher = EngineFetcher(policy) if kind == "engine" else Fetcher(policy)
        bad = 0
        for url in urls:
            result = fetcher.fetch(url, address_check=guard)
            if result.failure is not None or result.status != 200 or not result.body:
                bad += 1
        fetcher.close()
        with lock:
            failures += bad
            done += len(urls)

    if kind == "engine":
        shared_engine()  # started before the clock, as in a worker that has fetched before
    threads = [threading.Thread(target=work, args=(urls,)) for urls in urls_by_thread]
    cpu, wall = _cpu(), time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return time.monotonic() - wall, _cpu() - cpu, done, failures


def run_libcurl(urls_by_thread: list[list[str]], policy: FetchPolicy) -> tuple[float, float, int, int]:
    """The same URLs through libcurl's multi interface with as little Python as pycurl allows."""
    import io

    import pycurl

    multi = pycurl.CurlMulti()
    queues: dict[int, tuple[pycurl.Curl, list[str]]] = {}
    bodies: dict[int, io.BytesIO] = {}
    done = failures = 0

    def start(easy: pycurl.Curl) -> None:
        url = queues[id(easy)][1].pop()
        bodies[id(easy)] = body = io.BytesIO()
        easy.setopt(pycurl.URL, url)
        easy.setopt(pycurl.WRITEDATA, body)
        multi.add_handle(easy)

    cpu, wall = _cpu(), time.monotonic()
    for urls in urls_by_thread:
        if not urls:
            continue
        easy = pycurl.Curl()
        easy.setopt(pycurl.NOSIGNAL, 1)
        easy.setopt(pycurl.CONNECTTIMEOUT_MS, int(policy.connect_timeout * 1000))
        easy.setopt(pycurl.TIMEOUT_MS, int((policy.header_timeout + policy.body_timeout) * 1000))
        queues[id(easy)] = (easy, list(reversed(urls)))
        start(easy)
    running = len(queues)
    deadline = time.monotonic() + 600
    while running and time.monotonic() < deadline:
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            left, ok, failed = multi.info_read()
            for easy, *_ in [(e,) for e in ok] + failed:
                multi.remove_handle(easy)
                done += 1
                if easy.getinfo(pycurl.RESPONSE_CODE) != 200 or not bodies[id(easy)].getvalue():
                    failures += 1
                if queues[id(easy)][1]:
                    start(easy)
                else:
                    easy.close()
                    running -= 1
            if not left:
                break
        if running:
            multi.select(1.0)
    return time.monotonic() - wall, _cpu() - cpu, done, failures


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--pages", type=int, default=200, help="pages per server")
    ap.add_argument("--threads", type=int, default=40)
    ap.add_argument("--port", type=int, default=18726)
    ap.add_argument("--rounds", type=int, default=1, help="times each fetcher fetches the whole web")
    args = ap.parse_args(argv)

    spec = WebSpec(servers=args.servers, pages=args.pages, links=30, onsite=0.8, port=args.port, seed=25)
    web = Web(spec)
    policy = FetchPolicy(connect_timeout=5, header_timeout=5, body_timeout=10)
    with tempfile.TemporaryDirectory(prefix="fetch-engine-") as tmp:
        root = Path(tmp)
        ensure_written(root / "www", spec)
        (root / "run").mkdir()
        per_thread = max(1, args.threads // args.servers)
        urls_by_thread: list[list[str]] = []
        for s in range(args.servers):
            urls = [web.url(s, k) for k in range(args.pages)]
            for j in range(per_thread):
                urls_by_thread.append(urls[j::per_thread])
        print(
            f"bench.fetch_engine: {args.servers} servers × {args.pages} pages, {len(urls_by_thread)} threads; "
            f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        with NginxWeb(root / "www", spec, root / "run"):
            print(
                f"{'fetcher':<10}{'pages':>8}{'failed':>8}{'seconds':>10}{'pages/s':>10}{'CPU s':>9}{'CPU ms/page':>13}"
            )
            for _ in range(args.rounds):
                for kind in ("threads", "engine", "libcurl"):
                    runner = run_libcurl if kind == "libcurl" else lambda u, p, kind=kind: run(kind, u, p)
                    seconds, cpu, done, failed = runner(urls_by_thread, policy)
                    print(
                        f"{kind:<10}{done:>8,}{failed:>8,}{seconds:>10.2f}{done / seconds:>10.1f}{cpu:>9.2f}"
                        f"{cpu * 1000 / max(1, done):>13.3f}"
                    )


if __name__ == "__main__":
    main()
