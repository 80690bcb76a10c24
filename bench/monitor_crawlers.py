"""Benchmark: seed 002's per-machine table. 1,000 URLs checked with one crawler number, then with 1, 2, 3
and 4 crawler numbers (celery worker processes on this machine, each started with its own CRAWLER_NUM and
its share of the servers pinned to it), beside the paper's 1,000 URLs in 1.2 s. A benchmark, not a test.

    python -m bench.monitor_crawlers                    # 1-4 crawler numbers, 1,000 URLs, 5 timed rounds each
    python -m bench.monitor_crawlers --crawlers 1,2 --rounds 3 --json

The real stack, as bench.monitor_checks runs it (and with its pieces): a fresh PostgreSQL database
(bench.harness.db), a private redis-server, its own nginx serving every server's home page on 127.0.0.2.. (the
Python test web if nginx is missing), and `celery worker -Q monitor` processes. For N crawler numbers, N
workers are started with CRAWLER_NUM=1..N (each then also consumes `monitor.c<n>`), and server i is pinned
to crawler number 1 + i mod N (Server.crawler_num), so the beat dispatcher sends each server's batch to the
`monitor.c<n>` queue of its crawler.

Two tables. "1,000 URLs split": the paper's form, the same 1,000 URLs shared among the N crawlers. "1,000
URLs each": every crawler number has its own 1,000 servers (N x 1,000 URLs a round), the load growing with
the crawlers as it would with machines; its time per 1,000 is the round time divided by N.

A round makes the servers due, runs the dispatcher once and ends when all its rows are in the database. At
the end of each configuration the rows are counted: one StatusCheck per server per round, each carrying the
crawler number its server is pinned to (records written = records expected; exit 1 if not). CPU per check
of each process group comes from /proc: the workers, redis, the web, this database's PostgreSQL backends
(the workers' and this driver's, found in pg_stat_activity; the server is shared with others, so not the
postmaster's total), and the driver (dispatch and polling). Two cores give 2,000 ms of CPU a second: that,
over the CPU per check of our processes, is the most checks a second this machine can do, however many
crawler numbers share it.

Loopback answers in microseconds; the paper checked public sites. ``--latency-ms N`` puts a userspace delay
proxy (testweb/delayproxy.py) in front of every server, N ms a round trip (and N more for each new
connection), so the 1,000 URLs are checked through real latency; the report says whether this kernel has
sch_netem. The proxy runs in this driver process: its CPU counts as the driver's. Every figure, with the
load average before and after, goes to bench/results/ as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import timedelta

from bench import monitor_checks as mc
from bench.harness.db import ROOT, fresh_database, manage
from bench.harness.latency import DelayProxy, network_words
from bench.harness.proc import cpu_seconds, machine_cpu, tree_cpu, waited
from bench.harness.results import add_out_option, loadavg, write_results
from bench.harness.services import find_nginx

PAPER_MS_PER_1000 = 1200.0  # seed 002: 1,000 URLs registered on one machine, processed in 1,200 ms
PER = 1000  # figures are given per 1,000 URLs, as the paper's


def start_crawler(stack: ExitStack, env: dict, num: int, pool_threads: int, logdir: str) -> int:
    """One celery worker process with CRAWLER_NUM=num on the monitor queue (and so monitor.c<num>)."""
    log = open(os.path.join(logdir, f"crawler{num}.log"), "w")
    stack.callback(log.close)
    proc = subprocess.Popen(
        [
            sys.executable,
            *("-m", "celery", "-A", "crawladmin", "worker", "-Q", "monitor", "-P", "threads"),
            *("-c", str(pool_threads), "-n", f"crawler{num}-{os.getpid()}@%h"),
            *("--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "WARNING"),
        ],
        cwd=ROOT,
        env={**env, "CRAWLER_NUM": str(num)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    stack.callback(mc._stop, proc)
    return proc.pid


def _cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


class Meter:
    """CPU seconds of each process group we started, and of our database's backends, between two reads."""

    def __init__(self, workers: list[int], driver_backend: int) -> None:
        self.workers = workers
        self.driver_backend = driver_backend

    def _backends(self) -> dict[int, float]:
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            pids = [row[0] for row in cur.fetchall()]
        return {pid: cpu_seconds(pid) for pid in pids}

    def read(self) -> dict:
        backends = self._backends()
        ours = [*self.workers, *mc.STARTED["redis"], *backends]
        return {
            "waited": waited(ours),
            "workers": _cpu(self.workers),
            "redis": _cpu(mc.STARTED["redis"]),
            "web": sum(tree_cpu(pid) for pid in mc.STARTED["web"]),
            "backends": backends,
            "driver": cpu_seconds(os.getpid()),
            "machine": machine_cpu(),
        }

    def per_check(self, before: dict, after: dict, checks: int) -> dict:
        """CPU ms per check by group; backends that came and went between the reads count from zero."""
        own = self.driver_backend
        workers_pg = sum(cpu - before["backends"].get(pid, 0.0) for pid, cpu in after["backends"].items() if pid != own)
        driver_pg = after["backends"].get(own, 0.0) - before["backends"].get(own, 0.0)
        seconds = {
            "workers": after["workers"] - before["workers"],
            "postgres (workers' backends)": workers_pg,
            "redis": after["redis"] - before["redis"],
            "web": after["web"] - before["web"],
            "driver (dispatch, polling, its backend)": after["driver"] - before["driver"] + driver_pg,
        }
        out = {k: round(1000 * v / max(checks, 1), 3) for k, v in seconds.items()}
        out["all of ours"] = round(sum(out.values()), 3)
        # What checking costs, without the driver: its 10 ms polling for the round's rows is the benchmark's
        # own overhead (the dispatch it also does is one query per round, beat's job in a deployment).
        out["the monitor"] = round(out["all of ours"] - out["driver (dispatch, polling, its backend)"], 3)
        # Workers, redis and the backends (not nginx's workers, whose PIDs we do not hold), summed over threads.
        out["waited_for_cpu_ms_per_check"] = round(1000 * (after["waited"] - before["waited"]) / max(checks, 1), 3)
        busy = after["machine"][0] - before["machine"][0]
        wall = after["machine"][1] - before["machine"][1]
        out["machine_busy_share"] = round(busy / wall, 3) if wall else None
        return out


def run_rounds(ids: list[int], expect_num: dict[int, int], rounds: int, timeout: float, meter: Meter) -> dict:
    """One warm-up round, then `rounds` timed ones of these servers; the rows are counted and checked."""
    from django.db.models import Count, Max

    from crawlcore.models import StatusCheck
    from monitoring.services.check_dispatch import monitors_dispatch_due, monitors_make_due

    checks = StatusCheck.objects.filter(agent="monitor")
    times, first_mark = [], None
    before = None
    for r in range(rounds + 1):
        mark = checks.aggregate(m=Max("id"))["m"] or 0
        if r == 1:
            first_mark, before = mark, meter.read()
        t = time.perf_counter()
        monitors_make_due(server_ids=ids)
        sent = monitors_dispatch_due()
        if sent != len(ids):
            raise mc.BenchError(f"dispatched {sent} of {len(ids)} servers")
        deadline = time.monotonic() + timeout
        this_round = checks.filter(id__gt=mark)
        while (have := this_round.count()) < len(ids):
            if time.monotonic() > deadline:
                raise mc.BenchError(f"{have} of {len(ids)} rows after {timeout:g} s (lost checks?)")
            time.sleep(0.01)
        if r >= 1:
            times.append(time.perf_counter() - t)
    after = meter.read()
    time.sleep(0.3)  # anything doubled would land now
    timed = checks.filter(id__gt=first_mark)
    written = timed.count()
    expected = rounds * len(ids)
    per_server = dict(timed.values_list("server_id").annotate(n=Count("id")))
    wrong_num = sum(1 for sid, num in timed.values_list("server_id", "crawler_num") if expect_num[sid] != num)
    exact = written == expected and set(per_server) == set(ids) and set(per_server.values()) == {rounds}
    categories = dict(timed.values_list("category").annotate(n=Count("id")))
    median = statistics.median(times)
    return {
        "servers": len(ids),
        "round_ms": [round(1000 * x, 1) for x in times],
        "round_ms_median": round(1000 * median, 1),
        "checks_per_second": round(len(ids) / median, 1),
        "written": written,
        "expected": expected,
        "exact": exact and wrong_num == 0,
        "rows_on_another_crawler_num": wrong_num,
        "categories": categories,
        "cpu_ms_per_check": meter.per_check(before, after, expected),
    }


def configuration(n: int, mode: str, all_ids: list[int], args, env: dict, workdir: str, driver_backend: int):
    """Start n crawlers, pin the servers of this mode to them, run the rounds, stop the crawlers."""
    from crawladmin.celery import app
    from crawlcore.models import Server

    ids = all_ids[: args.urls] if mode == "split" else all_ids[: args.urls * n]
    pins = {sid: 1 + i % n for i, sid in enumerate(ids)}
    for num in range(1, n + 1):
        Server.objects.filter(id__in=[sid for sid, p in pins.items() if p == num]).update(crawler_num=num)
    with ExitStack() as stack:
        pids = [start_crawler(stack, env, num, args.pool_threads, workdir) for num in range(1, n + 1)]
        mc.wait_workers(app, n)
        out = run_rounds(ids, pins, args.rounds, args.round_timeout, Meter(pids, driver_backend))
    out.update(crawlers=n, mode=mode, ms_per_1000=round(out["round_ms_median"] * PER / len(ids), 1))
    cpu = out["cpu_ms_per_check"]["the monitor"]
    cores = os.cpu_count() or 1
    out["cores_limit_checks_per_second"] = round(cores * 1000 / cpu, 1) if cpu else None
    out["cores_limit_ms_per_1000"] = round(PER * cpu / cores, 1) if cpu else None
    return out


def _behind_proxy(stack: ExitStack, ports: list[int], per_web: list[int], rtt_ms: float) -> list[int]:
    """A delay proxy in front of every server: each web's addresses on a port of the proxy's, forwarding to the
    web's port; the monitor is given the proxy's ports, so every check crosses `rtt_ms` of round trip."""
    proxy = stack.enter_context(DelayProxy(rtt_ms))
    front = []
    for port, n in zip(ports, per_web, strict=True):
        q = 0
        for i in range(n):
            q = proxy.add((f"127.0.0.{2 + i}", q), (f"127.0.0.{2 + i}", port))
        front.append(q)
    return front


def run(args: argparse.Namespace) -> dict:
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    crawlers = sorted({int(x) for x in args.crawlers.split(",")})
    if not crawlers or crawlers[0] < 1 or crawlers[-1] > 64:
        raise mc.BenchError("--crawlers: numbers 1-64")
    modes = ["split"] + (["each"] if args.each else [])
    servers = args.urls * (crawlers[-1] if args.each else 1)
    with ExitStack() as stack:
        workdir = tempfile.mkdtemp(prefix="monitor-crawlers-")
        stack.callback(shutil.rmtree, workdir, True)
        broker = mc.start_redis(stack, workdir)
        database = stack.enter_context(fresh_database("crawlers"))
        env = mc.worker_env(database=database, broker=broker, workdir=workdir, args=args)
        manage(env, "migrate", "-v0", timeout=600)
        webs = -(-servers // mc.SERVERS_PER_WEB)
        per_web = [min(mc.SERVERS_PER_WEB, servers - i * mc.SERVERS_PER_WEB) for i in range(webs)]
        nginx = find_nginx() if args.web in ("auto", "nginx") else None
        if args.web == "nginx" and nginx is None:
            raise mc.BenchError("nginx not found (Debian: apt-get install -y nginx)")
        if nginx is not None:
            ports, web = mc.start_nginx(stack, nginx, workdir, per_web, args.nginx_workers), "nginx"
        else:
            ports, web = [mc.start_web(stack, 2, n) for n in per_web], "python"
        if args.latency_ms > 0:
            ports = _behind_proxy(stack, ports, per_web, args.latency_ms)
        csv_path = os.path.join(workdir, "servers.csv")
        with open(csv_path, "w") as f:
            for port, n in zip(ports, per_web, strict=True):
                for i in range(n):
                    f.write(f"127.0.0.{2 + i}:{port},bench,,3600,,\n")
        manage(env, "import_servers", "--trusted", csv_path, timeout=600)

        os.environ.update(env, DJANGO_SETTINGS_MODULE="crawladmin.settings")
        import django

        django.setup()
        from django.db import connection
        from django.utils import timezone

        from crawlcore.models import Server
        from monitoring.models import ServerMonitor

        # The import order is the web's order: ports first, then addresses (so "the first 1,000" are the
        # first four ports' servers).
        all_ids = list(Server.objects.order_by("id").values_list("id", flat=True))
        if len(all_ids) != servers:
            raise mc.BenchError(f"{len(all_ids)} servers imported, {servers} expected")
        # Imported monitors are due at once; a round makes due only the servers it checks.
        ServerMonitor.objects.update(next_check_at=timezone.now() + timedelta(days=1))
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            driver_backend = cur.fetchone()[0]
        results = []
        for mode in modes:
            for n in crawlers:
                out = configuration(n, mode, all_ids, args, env, workdir, driver_backend)
                results.append(out)
                if not args.json:
                    print(_row(out), flush=True)
        connection.close()
    return {
        "paper_ms_per_1000": PAPER_MS_PER_1000,
        "urls": args.urls,
        "web": web,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rounds": args.rounds,
        "fetch_threads": args.fetch_threads,
        "pool_threads": args.pool_threads,
        "batch": args.batch,
        "network": network_words(args.latency_ms),
        "results": results,
        "exact": all(r["exact"] for r in results),
    }


def _row(r: dict) -> str:
    head = f"  [{r['mode']}] {r['crawlers']} crawler number(s): {r['servers']} URLs"
    timing = f"median round {r['round_ms_median']} ms (rounds {r['round_ms']}), {r['ms_per_1000']} ms per 1,000"
    rows = f"rows {r['written']} of {r['expected']} {'exact' if r['exact'] else 'MISMATCH'}"
    return f"{head}, {timing}, {r['checks_per_second']} checks/s; {rows}"


def report(out: dict) -> None:
    print(
        f"\nseed 002, paper: 1,000 URLs on one machine in {out['paper_ms_per_1000']:.0f} ms. Here: {out['cpus']} CPUs"
        f" (load average {out['load_before']} before, {out['load_after']} after), web {out['web']},"
        f" {out['rounds']} timed rounds per row (median), {out['fetch_threads']} checks in flight per task,"
        f" batches of {out['batch']}, {out['pool_threads']} task threads per crawler."
    )
    print(f"network: {out['network']}")
    split = [r for r in out["results"] if r["mode"] == "split"]
    one = next((r for r in split if r["crawlers"] == 1), None)
    if one:
        print(
            f"{out['urls']:,} URLs checked with one crawler number: {one['round_ms_median']:.0f} ms"
            f" (paper {out['paper_ms_per_1000']:.0f} ms), {one['checks_per_second']:.0f} checks/s,"
            f" rows {one['written']}/{one['expected']}"
        )
    urls = f"{out['urls']:,} URLs"
    for mode, title in (("split", f"{urls} split among the crawler numbers"), ("each", f"{urls} each")):
        rows = [r for r in out["results"] if r["mode"] == mode]
        if not rows:
            continue
        print(f"\n{title}:")
        print(
            "| crawler numbers | URLs a round | round ms | ms per 1,000 | paper ms per 1,000 (1 machine) | checks/s"
            " | records written / expected | CPU ms per check (workers, postgres, redis, web)"
            " | 2 cores allow: checks/s, ms per 1,000 | machine busy |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            cpu = r["cpu_ms_per_check"]
            records = f"{r['written']} / {r['expected']}{'' if r['exact'] else ' MISMATCH'}"
            limit = f"{r['cores_limit_checks_per_second']:.0f}, {r['cores_limit_ms_per_1000']:.0f}"
            busy = f"{100 * (cpu['machine_busy_share'] or 0):.0f}%"
            print(
                f"| {r['crawlers']} | {r['servers']} | {r['round_ms_median']:.0f} | {r['ms_per_1000']:.0f}"
                f" | {out['paper_ms_per_1000']:.0f} | {r['checks_per_second']:.0f} | {records}"
                f" | {cpu['the monitor']:.2f} | {limit} | {busy} |"
            )
        print("CPU ms per check by process group:")
        for r in rows:
            skip = ("all of ours", "the monitor", "machine_busy_share", "waited_for_cpu_ms_per_check")
            groups = {k: v for k, v in r["cpu_ms_per_check"].items() if k not in skip}
            waited = r["cpu_ms_per_check"]["waited_for_cpu_ms_per_check"]
            print(
                f"  {r['crawlers']}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in groups.items())
                + f"; runnable but waiting for a CPU: {waited:.3f} ms per check (workers, redis, backends)"
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.monitor_crawlers", description=__doc__.split("\n\n")[0])
    p.add_argument("--crawlers", default="1,2,3,4", help="numbers of crawler numbers to run, comma-separated")
    p.add_argument("--urls", type=int, default=PER, help="URLs (servers) per table row or per crawler")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per configuration (after one warm-up)")
    p.add_argument("--no-each", dest="each", action="store_false", help="skip the '1,000 URLs each' table")
    p.add_argument("--pool-threads", type=int, default=2, help="celery threads per crawler (tasks in parallel)")
    p.add_argument("--fetch-threads", type=int, default=128, help="MONITOR_THREADS: checks in flight per task")
    p.add_argument("--batch", type=int, default=125, help="MONITOR_BATCH_SIZE: servers per message")
    p.add_argument("--web", choices=("auto", "nginx", "python"), default="auto")
    p.add_argument("--nginx-workers", type=int, default=1)
    p.add_argument("--round-timeout", type=float, default=60.0)
    p.add_argument("--latency-ms", type=float, default=0.0, help="round trip added by a userspace delay proxy")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the tables")
    p.add_argument("--json-out", metavar="PATH", help="also write the figures as JSON to PATH")
    add_out_option(p)
    args = p.parse_args(argv)
    load_before = loadavg()
    # A SIGTERM (timeout, an operator) unwinds like an error: the database is dropped, what we started stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.rounds < 1 or args.urls < 1 or args.latency_ms < 0:
        p.error("--rounds and --urls must be at least 1, --latency-ms at least 0")
    try:
        out = run(args)
    except mc.BenchError as exc:
        print(f"bench.monitor_crawlers: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # manage.py migrate / import_servers: the project itself is broken
        print(f"bench.monitor_crawlers: {exc}", file=sys.stderr)
        return 3
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f)
    if args.json:
        print(json.dumps(out))
    else:
        report(out)
    write_results("monitor_crawlers", args, out, load_before=load_before, out=args.out)
    return 0 if out["exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
