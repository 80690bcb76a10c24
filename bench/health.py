"""Benchmark: does a flapping server cost the healthy ones anything? The same local web (testweb/flapping.py)
crawled twice by an embedded `manage.py crawl` with the monitor running: once with its two flapping servers
(one answers 503 without Retry-After for its first minute, one answers every third crawl request 429), once
with all of them healthy. Printed for each run: the seconds until the last page of the healthy servers was
fetched (goal: within 10 % of each other), and the requests sent to the two flapping servers (in all, while
held, answered 429/503). A benchmark, not a test: it prints figures, and the machine's load average, since
other work on the machine shifts them.

    python -m bench.health                         # 20 servers of 12 pages, one run each way
    python -m bench.health --servers 50 --pages 40 --runs 3 --delay 0.2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testweb.flapping import HEALTH, FlappingWeb

ROOT = Path(__file__).resolve().parent.parent


def _env(data: str, delay: float, interval: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "MONITOR_"))}
    env.update(
        CRAWLADMIN_DATA_DIR=data,
        CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
        CRAWL_DEFAULT_DELAY=str(delay),
        CRAWL_CONNECT_TIMEOUT="2",
        CRAWL_HEADER_TIMEOUT="2",
        CRAWL_BODY_TIMEOUT="5",
        MONITOR_INTERVAL=str(interval),
        CRAWL_NR1_BACKOFF="20",
        CRAWL_NR2_BACKOFF="40",
    )
    return env


def _config(web: FlappingWeb) -> str:
    lines = ["servers:"] + [f"  - url: {web.origin(n)}\n    trusted: true" for n in web.names]
    lines.append("monitors:")
    lines += [f"  - server: {web.origin(n)}\n    health_url: {web.origin(n)}{HEALTH}" for n in web.names]
    return "\n".join(lines) + "\n"


def run_once(*, flapping: bool, servers: int, pages: int, delay: float, interval: float, threads: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-health-") as data:
        env = _env(data, delay, interval)
        web = FlappingWeb(
            servers, pages=pages, unavailable="s0" if flapping else None, limited="s1" if flapping else None
        )
        with web:
            config = Path(data) / "servers.yaml"
            config.write_text(_config(web))
            subprocess.run([sys.executable, "manage.py", "apply", str(config)], cwd=ROOT, env=env, check=True,
                           capture_output=True, timeout=300)  # fmt: skip
            load_before = os.getloadavg()[0]
            web.started = time.monotonic()
            t0 = time.time()
            proc = subprocess.run(
                [sys.executable, "manage.py", "crawl", "--json", "--no-progress", "--threads", str(threads),
                 "--max-seconds", "600", *web.seeds()],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            took = time.time() - t0
            if proc.returncode != 0:
                raise SystemExit(f"crawl failed: {proc.stderr[-2000:]}")
            healthy = web.names[2:]  # the same 18 (of 20) in both runs
            last = max(h.at for n in healthy for h in web.crawl_hits(n) if h.status == 200)
            complete = all(web.fetched(n) == web.page_paths() for n in healthy)
            flap = {n: web.crawl_hits(n) for n in ("s0", "s1")}
            return {
                "flapping": flapping,
                "healthy_seconds": round(last - t0, 2),
                "healthy_complete": complete,
                "crawl_seconds": round(took, 1),
                "requests_s0": len(flap["s0"]),
                "requests_s0_503": sum(1 for h in flap["s0"] if h.status == 503),
                "requests_s1": len(flap["s1"]),
                "requests_s1_429": sum(1 for h in flap["s1"] if h.status == 429),
                "pages_s0": len(web.fetched("s0")),
                "pages_s1": len(web.fetched("s1")),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--delay", type=float, default=0.2, help="CRAWL_DEFAULT_DELAY")
    parser.add_argument("--interval", type=float, default=5.0, help="MONITOR_INTERVAL")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1, help="pairs of runs, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
    results = []
    for _ in range(args.runs):
        for flapping in (True, False):
            r = run_once(flapping=flapping, servers=args.servers, pages=args.pages, delay=args.delay,
                         interval=args.interval, threads=args.threads)  # fmt: skip
            results.append(r)
            if not args.json:
                print(
                    f"{'with' if flapping else 'without'} flapping: healthy servers done in"
                    f" {r['healthy_seconds']:.1f} s"
                    f" (complete: {r['healthy_complete']}); requests to s0 {r['requests_s0']} ({r['requests_s0_503']}"
                    f" 503), s1 {r['requests_s1']} ({r['requests_s1_429']} 429); pages s0 {r['pages_s0']}/{args.pages},"
                    f" s1 {r['pages_s1']}/{args.pages}; crawl {r['crawl_seconds']} s; load {r['load_before']}"
                    f" → {r['load_after']}",
                    flush=True,
                )
    with_ = [r["healthy_seconds"] for r in results if r["flapping"]]
    without = [r["healthy_seconds"] for r in results if not r["flapping"]]
    ratio = statistics.median(with_) / statistics.median(without)
    summary = {"runs": results, "healthy_ratio": round(ratio, 3), "within_10_percent": abs(ratio - 1) <= 0.10,
               "cores": os.cpu_count()}  # fmt: skip
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"healthy servers' time with / without the flapping ones: {ratio:.3f} "
              f"({'within' if summary['within_10_percent'] else 'NOT within'} 10 %); {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
