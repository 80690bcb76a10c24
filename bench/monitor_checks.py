"""Benchmark: status checks through the real stack (PostgreSQL, Redis, celery worker processes) against
local web servers on loopback; prints checks per second and verifies the row count. A benchmark, not a test.

    python -m bench.monitor_checks                      # 10,000 checks: 500 servers x 20 rounds
    python -m bench.monitor_checks --servers 20 --rounds 5 --webs 1 --json    # a small run

What it does: creates a uniquely named PostgreSQL database (127.0.0.1:5432, user postgres) and migrates it,
starts its own redis-server on a free port, the web the servers live on, and ``--workers`` celery worker
processes on the ``monitor`` queue. The web is its own nginx (if installed: own config, pid, logs and
temp paths under a temp directory, listening on 127.0.0.2.. with one port per 250 servers, serving each
server's home page as the test web renders it); without nginx it falls back to the Python test web
(``python -m testweb``, one process per 250 servers) and says so. Before the full run it measures the
web alone (wrk, fresh connection per request, if installed) and the check client alone
(crawler.multicheck, no database or broker).

Each round makes every server due and runs the beat job's dispatcher once (batches of MONITOR_BATCH_SIZE
ids go through Redis); the workers claim, fetch (a real GET over a fresh TCP connection per check) and
bulk-write. A round ends when its rows are all in the database. At the end every server must have exactly
one StatusCheck per round: none lost, none doubled. Everything it started is stopped by PID and the
database dropped, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench.harness.proc import cpu_seconds, machine_cpu, stat, tree_cpu
from bench.harness.services import find_nginx
from bench.harness.services import start_redis as harness_redis
from testweb.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
SERVERS_PER_WEB = 250  # 127.0.0.2 .. 127.0.0.251


class BenchError(RuntimeError):
    pass


# Processes this benchmark started, by role, for the CPU accounting (the machine may be shared).
STARTED: dict[str, list[int]] = {"redis": [], "web": [], "workers": []}


def _stop(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def worker_env(*, database: str, broker: str, workdir: str, args: argparse.Namespace) -> dict[str, str]:
    """The environment of the benchmark's workers and commands: ours, none of the caller's crawl settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRAWL", "MONITOR_", "DATABASE_URL", "CELERY_", "DJANGO_"))
    }
    env.update(
        {
            "DATABASE_URL": database,
            "CELERY_BROKER_URL": broker,
            "DJANGO_SECRET_KEY": "bench-" + secrets.token_hex(32),
            "CRAWLADMIN_DATA_DIR": workdir,
            "CRAWL_CONNECT_TIMEOUT": "2",
            "CRAWL_HEADER_TIMEOUT": "2",
            "CRAWL_BODY_TIMEOUT": "2",
            "MONITOR_THREADS": str(args.fetch_threads),
            "MONITOR_BATCH_SIZE": str(args.batch),
        }
    )
    return env


def start_redis(stack: ExitStack, workdir: str) -> str:
    """A private redis-server (bench.harness), its PID counted as the "redis" role."""
    url, pid = harness_redis(stack, workdir)
    STARTED["redis"].append(pid)
    return url


def create_database(stack: ExitStack) -> str:
    import psycopg2
    import psycopg2.errors

    name = f"crawladmin_bench_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        con = psycopg2.connect(dbname="postgres", connect_timeout=5, **PG)
    except psycopg2.OperationalError as exc:
        raise BenchError(f"PostgreSQL not reachable at {PG['host']}:{PG['port']}: {exc}") from None
    con.autocommit = True
    for attempt in range(5):
        try:
            with con.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
            break
        except psycopg2.errors.ObjectInUse:
            # "source database template1 is being accessed by other users": someone else is creating a
            # database at this moment (the machine is shared); try again shortly.
            if attempt == 4:
                raise BenchError("CREATE DATABASE: template1 stayed busy (others creating databases)") from None
            time.sleep(0.5 + attempt)

    def drop() -> None:
        with con.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.close()

    stack.callback(drop)
    return f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{name}"


def start_web(stack: ExitStack, first_octet: int, servers: int) -> int:
    """One test web process (its own GIL) serving `servers` normal servers; returns its port."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testweb",
            "--port",
            "0",
            "--servers",
            str(servers),
            "--first-octet",
            str(first_octet),
            "--pages",
            "3",
            "--no-silent",
            "--no-slow",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stack.callback(_stop, proc)
    STARTED["web"].append(proc.pid)
    line = proc.stdout.readline()  # the first seed URL: http://127.0.0.x:PORT/
    if not line.startswith("http://"):
        raise BenchError(
            f"testweb did not start: {line!r} {proc.stderr.read()[-500:] if proc.poll() is not None else ''}"
        )
    return int(line.split(":")[2].split("/")[0])


NGINX_CONF = """\
# Generated by bench.monitor_checks; everything under {root}. Loopback listeners only.
worker_processes {workers};
pid {root}/nginx.pid;
error_log {root}/error.log warn;
worker_rlimit_nofile 16384;
events {{ worker_connections 8192; multi_accept on; }}
http {{
    access_log off;
    server_tokens off;
    default_type text/html;
    keepalive_timeout 5s;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    server {{
{listens}
        root {root}/www/$server_addr-$server_port;
        location = / {{ try_files /index.html =404; }}
        location / {{ return 404; }}
    }}
}}
"""


def _accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), 0.2):
            return True
    except OSError:
        return False


def start_nginx(stack: ExitStack, exe: str, workdir: str, per_web: list[int], workers: int) -> list[int]:
    """Our own nginx (foreground master, so we hold its PID) serving each server's home page, as the
    test web model renders it, on 127.0.0.2.. with one port per group of up to 250 servers. Returns the
    ports. Never touches a system nginx: own config, pid, logs and temp paths under `workdir`."""
    from testweb.site import SiteSpec, Web

    root = os.path.join(workdir, "nginx")
    for sub in ("tmp", "www"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    # nginx workers run as nobody: let them traverse to the pages (mkdtemp made the work dir 0700).
    os.chmod(workdir, 0o711)
    for _attempt in range(3):
        ports = [free_port() for _ in per_web]
        listens = []
        for port, n in zip(ports, per_web, strict=True):
            spec = SiteSpec(n_servers=n, pages_per_server=3, first_octet=2, silent_server=False, slow_server=False)
            web = Web(spec, port)
            for host in web.normal_hosts():
                status, _, body = web.response(host, "/", "GET")
                assert status == 200
                site = os.path.join(root, "www", f"{host}-{port}")
                os.makedirs(site, exist_ok=True)
                with open(os.path.join(site, "index.html"), "wb") as f:
                    f.write(body)
                listens.append(f"        listen {host}:{port} backlog=4096;")
        for dirpath, _dirs, filenames in os.walk(root):
            os.chmod(dirpath, 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        conf = os.path.join(root, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(root=root, workers=workers, listens="\n".join(listens)))
        err = open(os.path.join(root, "stderr.log"), "w")
        stack.callback(err.close)
        proc = subprocess.Popen(
            [exe, "-p", root, "-c", conf, "-e", os.path.join(root, "error.log"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        stack.callback(_stop, proc)  # by PID: SIGTERM to our master stops its workers
        STARTED["web"].append(proc.pid)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if all(_accepting("127.0.0.2", port) for port in ports):
                return ports
            time.sleep(0.05)
        _stop(proc)
        # A port may have been taken on a 127.0.0.x alias by someone else meanwhile: try other ports.
    log = open(os.path.join(root, "error.log")).read()[-800:] if os.path.exists(os.path.join(root, "error.log")) else ""
    raise BenchError(f"nginx did not start: {log}")


def nginx_capacity(port: int, seconds: float = 2.0) -> float | None:
    """Requests/s of the nginx alone, a fresh connection per request (wrk, if installed)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    out = subprocess.run(
        [wrk, "-t", "1", "-c", "64", "-d", f"{seconds:g}s", "-H", "Connection: close", f"http://127.0.0.2:{port}/"],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    ).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    return None


def cpu_snapshot(postmaster: int | None) -> dict:
    roles = {role: sum(tree_cpu(pid) for pid in pids) for role, pids in STARTED.items()}
    roles["postgres (all databases)"] = tree_cpu(postmaster) if postmaster else 0.0
    roles["driver"] = cpu_seconds(os.getpid())
    return {"roles": roles, "machine": machine_cpu()}


def cpu_per_check(before: dict, after: dict, checks: int) -> dict:
    """CPU ms per check by role over the timed rounds, and how busy the whole machine was."""
    out = {
        role: round(1000 * (cpu - before["roles"][role]) / max(checks, 1), 3) for role, cpu in after["roles"].items()
    }
    out["all of these"] = round(sum(out.values()), 3)
    busy = after["machine"][0] - before["machine"][0]
    wall_cores = after["machine"][1] - before["machine"][1]
    out["machine_busy_share"] = round(busy / wall_cores, 3) if wall_cores else None
    out["machine_total"] = round(1000 * busy / max(checks, 1), 3)
    return out


def client_alone(urls: list[str], *, rounds: int, parallel: int) -> dict:
    """The check client with no database, broker or worker: one process, one thread, `rounds` x urls."""
    from crawler.http import FetchPolicy
    from crawler.multicheck import CheckRequest, MultiChecker

    if rounds < 1:
        return {"client_alone_cps": None, "client_us_cpu_per_check": None}
    requests = [CheckRequest(u) for u in urls]
    with MultiChecker(FetchPolicy(2.0, 2.0, 2.0), max_parallel=parallel) as checker:
        checker.check_all(requests[:50])  # warm up
        cpu, t = time.process_time(), time.perf_counter()
        ok = sum(r.result.status == 200 for _ in range(rounds) for r in checker.check_all(requests))
        elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    n = rounds * len(urls)
    if ok != n:
        raise BenchError(f"client alone: {n - ok} of {n} checks did not answer 200")
    return {"client_alone_cps": round(n / elapsed, 1), "client_us_cpu_per_check": round(1e6 * cpu / n, 1)}


def start_workers(stack: ExitStack, env: dict, n: int, pool_threads: int, logdir: str) -> None:
    for i in range(n):
        log = open(os.path.join(logdir, f"worker{i}.log"), "w")
        stack.callback(log.close)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "crawladmin",
                "worker",
                "-Q",
                "monitor",
                "-P",
                "threads",
                "-c",
                str(pool_threads),
                "-n",
                f"bench{i}@%h",
                "--without-heartbeat",
                "--without-mingle",
                "--without-gossip",
                "-l",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(_stop, proc)
        STARTED["workers"].append(proc.pid)


def wait_workers(app, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5) or []
        if len(replies) >= n:
            return
    raise BenchError(f"{n} celery workers did not answer within {timeout:g} s")


def run(args: argparse.Namespace) -> dict:
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())  # the machine may be shared: say how busy
    with ExitStack() as stack:
        workdir = tempfile.mkdtemp(prefix="monitor-bench-")
        stack.callback(shutil.rmtree, workdir, True)
        broker = start_redis(stack, workdir)
        database = create_database(stack)
        env = worker_env(database=database, broker=broker, workdir=workdir, args=args)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)

        per_web = [min(SERVERS_PER_WEB, args.servers - i * SERVERS_PER_WEB) for i in range(args.webs)]
        if sum(per_web) < args.servers or min(per_web) < 1:
            raise BenchError(f"{args.webs} test web(s) serve 1-{SERVERS_PER_WEB} servers each; {args.servers} asked")
        web = args.web
        nginx = find_nginx() if web in ("auto", "nginx") else None
        if web == "nginx" and nginx is None:
            raise BenchError("nginx not found (Debian: apt-get install -y nginx)")
        note = ""
        if nginx is not None:
            ports = start_nginx(stack, nginx, workdir, per_web, args.nginx_workers)
            web = "nginx"
        else:
            if web == "auto":
                note = (
                    "nginx is not installed (Debian: apt-get install -y nginx): serving from the Python test web,"
                    " which tops out near 1,800 requests/s on its own"
                )
                print(f"bench.monitor_checks: NOTE: {note}", file=sys.stderr)
            ports = [start_web(stack, 2, n) for n in per_web]
            web = "python"
        urls = [f"http://127.0.0.{2 + i}:{port}/" for port, n in zip(ports, per_web, strict=True) for i in range(n)]
        breakdown = {
            "web_alone_rps": nginx_capacity(ports[0]) if web == "nginx" else None,
            **client_alone(urls, rounds=args.client_rounds, parallel=args.fetch_threads),
        }
        csv_path = os.path.join(workdir, "servers.csv")
        with open(csv_path, "w") as f:
            for port, n in zip(ports, per_web, strict=True):
                for i in range(n):
                    f.write(f"127.0.0.{2 + i}:{port},bench,,3600,,\n")
        subprocess.run(
            [sys.executable, "manage.py", "import_servers", "--trusted", csv_path],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=300,
            stdout=subprocess.DEVNULL,
        )

        start_workers(stack, env, args.workers, args.pool_threads, workdir)
        os.environ.update(env, DJANGO_SETTINGS_MODULE="crawladmin.settings")  # same database and broker as the workers
        import django

        django.setup()
        from django.db import connection
        from django.db.models import Count, Max

        from crawladmin.celery import app
        from crawlcore.models import StatusCheck
        from monitoring.check_stats import percentile
        from monitoring.models import ServerMonitor
        from monitoring.services.check_dispatch import monitors_dispatch_due, monitors_make_due

        wait_workers(app, args.workers)
        ids = list(ServerMonitor.objects.values_list("server_id", flat=True))
        checks = StatusCheck.objects.filter(agent="monitor")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        postmaster = int(stat(backend)[1]) if stat(backend) else None  # our backend's parent
        cpu_before = cpu_snapshot(postmaster)
        round_times = []
        mark = 0  # every row of the rounds so far has an id <= mark; a round's rows get larger ids
        started = time.perf_counter()
        for r in range(1, args.rounds + 1):
            t = time.perf_counter()
            monitors_make_due(server_ids=ids)
            sent = monitors_dispatch_due()
            if sent != len(ids):
                raise BenchError(f"round {r}: dispatched {sent} of {len(ids)} servers")
            want = len(ids)
            deadline = time.monotonic() + args.round_timeout
            # Counting only this round's rows (an index range on the id) keeps the poll cheap for the
            # database however many rows the earlier rounds left; the exact total is checked at the end.
            this_round = checks.filter(id__gt=mark)
            while (have := this_round.count()) < want:
                if time.monotonic() > deadline:
                    raise BenchError(f"round {r}: {have} of {want} rows after {args.round_timeout:g} s (lost checks?)")
                time.sleep(0.01)
            round_times.append(time.perf_counter() - t)
            mark = checks.aggregate(m=Max("id"))["m"]
        elapsed = time.perf_counter() - started
        cpu_after = cpu_snapshot(postmaster)
        time.sleep(0.5)  # anything doubled would land now
        total = checks.count()
        per_server = set(checks.values("server_id").annotate(n=Count("id")).values_list("n", flat=True))
        categories = dict(checks.values_list("category").annotate(n=Count("id")))
        latencies = sorted(checks.values_list("latency_ms", flat=True))
        connects = sorted(v for v in checks.values_list("connect_ms", flat=True) if v is not None)
        answered = checks.filter(status_code__isnull=False)
        phases = ("dns_ms", "connect_ms", "first_byte_ms", "body_ms")
        timed = answered.filter(**{f"{f}__isnull": False for f in phases}, bytes__gt=0).count()
        n_answered = answered.count()
        connection.close()
        expected = args.rounds * len(ids)
        out = {
            "checks": total,
            "expected": expected,
            "exact": total == expected and per_server == {args.rounds},
            "checks_per_second": round(total / elapsed, 1),
            "seconds": round(elapsed, 3),
            "round_ms_median": round(1000 * statistics.median(round_times), 1),
            "servers": len(ids),
            "rounds": args.rounds,
            "workers": args.workers,
            "pool_threads": args.pool_threads,
            "fetch_threads": args.fetch_threads,
            "webs": args.webs,
            "web": web,
            "web_note": note,
            "batch": args.batch,
            **breakdown,
            "categories": categories,
            "latency_ms": {
                "p50": round(percentile(latencies, 50), 1),
                "p99": round(percentile(latencies, 99), 1),
                "max": round(latencies[-1], 1),
            },
            "connect_ms_max": round(connects[-1], 1) if connects else None,
            "answered": n_answered,
            "answered_with_all_phases_and_bytes": timed,
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "cpu_ms_per_check": cpu_per_check(cpu_before, cpu_after, total),
        }
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.monitor_checks", description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", type=int, default=500)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument(
        "--webs", type=int, default=2, help=f"ports (test web processes), {SERVERS_PER_WEB} servers each at most"
    )
    p.add_argument("--workers", type=int, default=2, help="celery worker processes")
    p.add_argument("--pool-threads", type=int, default=1, help="celery threads per worker (tasks in parallel)")
    p.add_argument("--fetch-threads", type=int, default=64, help="MONITOR_THREADS: checks in flight per task")
    p.add_argument("--batch", type=int, default=250, help="MONITOR_BATCH_SIZE: servers per message")
    p.add_argument("--web", choices=("auto", "nginx", "python"), default="auto", help="auto: nginx if installed")
    p.add_argument("--nginx-workers", type=int, default=1, help="nginx worker processes")
    p.add_argument("--client-rounds", type=int, default=4, help="rounds of the client-alone measurement (0: skip)")
    p.add_argument("--round-timeout", type=float, default=60.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        out = run(args)
    except BenchError as exc:
        print(f"bench.monitor_checks: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:  # migrate / import_servers: their own output says why
        print(
            f"bench.monitor_checks: {' '.join(map(str, exc.cmd[1:]))} failed (exit {exc.returncode})", file=sys.stderr
        )
        return 3  # not 2 ("nothing to run against"): the project itself is broken
    if args.json:
        print(json.dumps(out))
    else:
        if out["web_note"]:
            print(f"NOTE: {out['web_note']}")
        rps = out["web_alone_rps"]
        web_alone = f"{rps:.0f} requests/s (wrk, a fresh connection each)" if rps else "not measured"
        print(f"web: {out['web']}; alone: {web_alone}")
        if out["client_alone_cps"]:
            print(
                f"check client alone (one thread, no database or broker): {out['client_alone_cps']:.0f} checks/s, "
                f"{out['client_us_cpu_per_check']:.0f} us CPU per check"
            )
        print(
            f"{out['checks']} status checks ({out['servers']} servers x {out['rounds']} rounds) in {out['seconds']} s: "
            f"{out['checks_per_second']} checks/s; median round {out['round_ms_median']} ms"
        )
        print(
            f"rows: {out['checks']} of {out['expected']} expected, one per server per round: "
            f"{'exact' if out['exact'] else 'MISMATCH'}; categories {out['categories']}"
        )
        print(
            f"check latency ms: {out['latency_ms']}, slowest connect {out['connect_ms_max']} ms; "
            f"{out['answered_with_all_phases_and_bytes']} of {out['answered']} answered checks have DNS, connect, "
            "first-byte and body times and a byte count"
        )
        print(
            f"{out['workers']} worker processes x {out['pool_threads']} task threads"
            f" x {out['fetch_threads']} checks in flight, batches of {out['batch']}, "
            f"{out['cpus']} CPUs, load average before {out['load_before']}"
        )
        cpu = dict(out["cpu_ms_per_check"])
        share = cpu.pop("machine_busy_share")
        machine = cpu.pop("machine_total")
        print(
            f"CPU ms per check: {cpu}; the whole machine used {machine} ms per check"
            f" ({100 * share:.0f}% of its {out['cpus']} CPUs busy during the rounds, others' work included)"
        )
    return 0 if out["exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
