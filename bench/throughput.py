"""Benchmark: crawl throughput of the real stack against Scrapy on the same generated web.
Prints figures; asserts nothing, but checks each crawl found exactly the web and says so.

    python -m bench.throughput [--runs 2] [--servers 20] [--pages 2500] [--only ours|scrapy]
                               [--keep-web DIR] [--workers SPEC] [--slots 2] [--env NAME=VALUE …]
                               [--no-frontier] [--profile] [--json PATH]

1. The web (testweb.generated): `servers` × `pages` static pages of ~10 KB with 30 links each (80 % on-site),
   a robots.txt per server disallowing /private/, written under a temp directory (or --keep-web DIR, reused
   when its manifest matches) and served by our own nginx on 127.0.1.1 … on one port, access log on. wrk
   measures it first (keep-alive and a fresh connection per request) so the reader sees it is no bottleneck.
2. Ours, per run: a fresh PostgreSQL database (bench.harness.db), migrated; a private redis-server; the celery
   workers of --workers and one `celery beat`; then `manage.py crawl <the home pages>` seeds, dispatches and
   watches (README "The cluster"). The clock is the crawl command's own: from inserting the seeds until
   nothing is due, leased, unextracted, or waiting for its full-text vector (built in batches after
   extraction, crawlcore.services.search_index: its CPU is in the figures until the index is complete).
   Loopback is allowed (CRAWL_ALLOW_PRIVATE), no politeness delay (CRAWL_DEFAULT_DELAY=0),
   CRAWL_SERVER_CONCURRENCY = --slots.
3. Scrapy, per run (bench.baselines.scrapy_spider): CrawlSpider + LinkExtractor, robots.txt obeyed, --slots per
   server, slots × servers in all, no delay, no autothrottle, one item per page to JSON lines. Its clock is
   Scrapy's own elapsed_time_seconds (engine start to close; the interpreter's start is outside, as ours).
4. Figures, medians over --runs: pages, seconds, pages/s, CPU seconds per page, worker peak RSS, rows
   written per second; and the ratios ours ÷ Scrapy. CPU from /proc (utime + stime, with reaped children):
   every process of ours (workers and their pool children, beat, the crawl command), the redis-server, and
   ALL PostgreSQL server processes — nothing else should use that server during the run: the output says
   how many transactions other databases committed meanwhile. nginx is reported apart (neither's).
   Rows: pg_stat_user_tables inserts + updates + deletes in the benchmark database.
5. Checks after each crawl (mismatches printed loudly, exit status 1): ours — Visited URLs = Page rows =
   public pages, robots-excluded URLs = linked /private/ pages, Link rows = distinct links, every page with its
   full-text vector and none waiting for one (SEARCH_INDEX off: none waiting), nothing failed,
   StatusCheck rows = requests in the nginx access log, each page requested once, /private/ never;
   Scrapy — one item per public page, each requested once, /private/ never.
6. --profile (ours): where a page's CPU goes, by process, by statement (pg_stat_statements' execution time,
   calls and rows a page) and by Python function (py-spy samples the workers, their pool and parse
   processes, and beat from outside while the crawl runs: bench.cpu_profile); printed after the run's
   figures and kept under "profile". Nothing runs inside the sampled processes; py-spy's own CPU is
   printed apart, and the machine's second core shares it.
7. Scale figures (bench.frontier, unless --no-frontier): claiming 1,000 due URLs with 1,000,000 in the
   frontier, and inserting 100,000 discovered links.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.harness.proc import TICK, child_named, children, machine_cpu, stat, tree_cpu, tree_pss, tree_rss
from bench.harness.services import find_nginx, wait_for_workers
from testweb.generated import NginxWeb, Web, WebSpec, ensure_written, port_is_free

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024


class BenchError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------------
# Worker layout


@dataclass(frozen=True)
class WorkerSpec:
    queues: str  # celery -Q, comma-separated
    pool: str
    concurrency: int

    @property
    def name(self) -> str:
        return self.queues.replace(",", "+")


def parse_workers(text: str) -> list[WorkerSpec]:
    """`QUEUES:POOL:N[,QUEUES:POOL:N…]`, queues of one process joined by '+':
    e.g. `load:threads:40,extract+housekeeping:prefork:2`."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        try:
            queues, pool, n = item.split(":")
            spec = WorkerSpec(queues.replace("+", ","), pool, int(n))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--workers {item!r}: expected QUEUES:POOL:N, e.g. load:threads:40"
            ) from None
        if pool not in ("threads", "prefork", "solo", "gevent", "eventlet") or spec.concurrency < 1:
            raise argparse.ArgumentTypeError(f"--workers {item!r}: unknown pool or concurrency < 1")
        out.append(spec)
    queues = {q for w in out for q in w.queues.split(",")}
    missing = {"load", "extract", "housekeeping"} - queues
    if missing:
        raise argparse.ArgumentTypeError(f"--workers: no worker consumes {', '.join(sorted(missing))}")
    return out


def default_workers(servers: int, slots: int) -> str:
    # Fetching is I/O: one thread per server slot. Parsing is CPU, but lxml parses with the GIL released and
    # an extract task also waits on PostgreSQL (its writes of URLs and links): threads of ONE process keep a
    # core busy, where a prefork pool of 2 per core held 2 × cores + 1 copies of Django, lxml and tldextract
    # (~575 of the workers' ~920 MB RSS at the start of a crawl, ~700 at its end). One process can use one
    # core for Python: on this 2-core machine that is more than extraction needs (its ~3 ms a page at 300
    # pages/s is 0.9 of a core); on a bigger machine, give extract a prefork pool (--workers). The beat jobs
    # (dispatcher, reconciler, sweeps) share that process: extract tasks last tens of milliseconds, so a
    # dispatch never waits long behind them, and two threads more than extraction's are theirs.
    return f"load:threads:{servers * slots},extract+housekeeping:threads:{2 * (os.cpu_count() or 2) + 2}"


class RssSampler:
    """Every 0.5 s: the resident memory of each watched process tree. Keeps the peaks and a time series."""

    def __init__(self, groups: dict[str, int], interval: float = 0.5):
        self.groups, self.interval = groups, interval
        self.peak: dict[str, int] = dict.fromkeys(groups, 0)
        self.peak_total = 0
        self.peak_pss_total = 0
        self.series: list[tuple[float, int]] = []  # (seconds since start, total bytes)
        self.pss_series: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self, t0: float) -> None:
        total = pss = 0
        for name, pid in self.groups.items():
            rss = tree_rss(pid)
            self.peak[name] = max(self.peak[name], rss)
            total += rss
            pss += tree_pss(pid)
        self.peak_total = max(self.peak_total, total)
        self.peak_pss_total = max(self.peak_pss_total, pss)
        now = time.monotonic() - t0
        self.series.append((now, total))
        self.pss_series.append((now, pss))

    def _run(self) -> None:
        t0 = time.monotonic()
        while not self._stop.is_set():
            self._sample(t0)
            self._stop.wait(self.interval)
        self._sample(t0)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def at_fraction(self, frac: float, *, pss: bool = False) -> int:
        """Total RSS (or PSS) at this fraction of the sampled time."""
        series = self.pss_series if pss else self.series
        if not series:
            return 0
        end = series[-1][0]
        return next((rss for t, rss in series if t >= frac * end), series[-1][1])


_PG_BACKGROUND = ("checkpointer", "background writer", "walwriter", "launcher", "archiver", "stats collector")


class BackendSampler:
    """Where PostgreSQL's CPU goes, by process, sampled from /proc every `interval` seconds: the backends of
    our database (their process title names it: `postgres: 15/main: user <db> host(port) …`, autovacuum
    workers' too), the server's background processes (WAL writer, checkpointer, …: shared by every database),
    and other databases' backends. A backend that ends between two samples loses what it spent since the
    last one, and one that lives shorter than `interval` may not be seen at all: what the exact all-process
    total has beyond the sampled sum is `unattributed` (such ends, ours or others'). On a server others use
    meanwhile, `ours_estimate` is the best figure for our database alone: our backends, the background
    processes, and the unattributed part in proportion to the backends' sampled shares."""

    # 0.2 s: every sample reads /proc of each server process (~80 with a crawl's connections); at 0.02 s the
    # sampler alone took ~20 % of a core from the machine the crawl runs on. Short-lived backends it misses
    # are in `unattributed`, apportioned below; the crawl's own connections live as long as their workers.
    def __init__(self, postmaster: int | None, database: str, interval: float = 0.2):
        self.postmaster, self.tag, self.interval = postmaster, f" {database} ", interval
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._sample(baseline=True)

    def _classify(self, pid: int) -> str | None:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace")
        except OSError:
            return None
        if not title.startswith("postgres:"):
            return None  # just forked, its title not set yet: classified at a later sample
        if self.tag in title:
            return "ours"
        return "background" if any(name in title for name in _PG_BACKGROUND) else "others"

    def _sample(self, baseline: bool = False) -> None:
        if self.postmaster is None:
            return
        for pid in children(self.postmaster):
            kind = self.kind.get(pid) or self._classify(pid)
            fields = stat(pid)
            if kind is None or not fields:
                continue
            self.kind[pid] = kind
            ticks = int(fields[11]) + int(fields[12])  # utime, stime
            # A process already there at the start counts from then on; a new one from its birth.
            self.first.setdefault(pid, ticks if baseline else 0)
            self.last[pid] = ticks

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> BackendSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        self._sample()

    def breakdown(self, total: float) -> dict[str, float]:
        """Seconds by kind, `unattributed` (the exact `total` minus the samples) and `ours_estimate`."""
        out = dict.fromkeys(("ours", "background", "others"), 0.0)
        for pid, ticks in self.last.items():
            out[self.kind[pid]] += (ticks - self.first[pid]) / TICK
        rest = max(0.0, total - sum(out.values()))
        backends = out["ours"] + out["others"]
        share = out["ours"] / backends if backends else 1.0
        out["unattributed"] = rest
        out["ours_estimate"] = out["ours"] + out["background"] + rest * share
        return {k: round(v, 2) for k, v in out.items()}


def run_timed(cmd: list[str], *, env: dict | None, log: Path, timeout: float, watch: dict[str, int] | None = None):
    """Run a command to its end; (exit code, wall seconds, CPU seconds from its rusage, RssSampler of the
    `watch` process trees, or of the command's own when none are given)."""
    with open(log, "w") as out:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        with RssSampler(watch or {"command": proc.pid}) as sampler:
            try:
                while True:
                    # Polled, not blocking: a signal to the benchmark stops it at once, and cleans up.
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # rusage: CPU of it and its children
                    if pid:
                        break
                    if time.monotonic() > deadline:
                        proc.kill()
                    if watch and (dead := worker_ended(watch)):
                        proc.kill()
                        os.wait4(proc.pid, 0)
                        raise BenchError(f"{dead} during the crawl: the run is void")
                    time.sleep(0.1)
            except BaseException:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - t, usage.ru_utime + usage.ru_stime, sampler


def worker_ended(watch: dict[str, int]) -> str:
    """The first watched process that has ended, said with how (a worker that dies leaves a crawl that waits
    for it until --max-seconds): 'w0-load (pid 8398) ended: killed by SIGSEGV'; '' while all run. An ended
    child of ours stays a zombie until it is reaped, so its state is read, and its exit peeked at unreaped."""
    for name, pid in watch.items():
        fields = stat(pid)
        if fields and fields[0] != "Z":
            continue
        how = "ended"
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None  # not our child, or already reaped
        if info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            how = f"ended: killed by {signal.Signals(info.si_status).name}"
        elif info is not None:
            how = f"ended: exit code {info.si_status}"
        return f"{name} (pid {pid}) {how}"
    return ""


# --------------------------------------------------------------------------------------------------
# PostgreSQL


# A private cluster (the default, --pg private) as durable as the shared server (fsync and synchronous commit
# on, 128 MB of shared buffers), with pg_stat_statements loaded: it counts every statement our database runs.
PRIVATE_PG = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_preload_libraries": "'pg_stat_statements'",
    "pg_stat_statements.track_utility": "on",
    "pg_stat_statements.max": 10000,
}
# The benchmark's own queries, not the crawl's.
_BENCH_QUERY = re.compile(r"pg_stat_|pg_backend_pid|current_database\(\)|pg_database", re.I)
_WORD = re.compile(r"[a-z_][a-z0-9_$]*")
_WRITE = re.compile(r"\b(INSERT\s+INTO|(?<!DO )UPDATE|DELETE\s+FROM)\s+\"?(\w+)", re.I)  # not an upsert's


FK_CHECK = "(FK check, per row) of"


def pg_snapshot(db_url: str) -> dict:
    """Rows written per table in the benchmark database (inserts, updates, deletes); transactions of every
    other database; and, when pg_stat_statements is there, the calls of each statement of our database."""
    import psycopg2

    with closing(psycopg2.connect(db_url)) as con:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables")
            split = {name: (ins, upd, dele) for name, ins, upd, dele in cur.fetchall()}
            tables = {name: sum(v) for name, v in split.items()}
            cur.execute(
                "SELECT datname, xact_commit + xact_rollback, sessions FROM pg_stat_database WHERE datname IS NOT NULL"
            )
            rows = cur.fetchall()
            xacts = {name: n for name, n, _ in rows}
            sessions = {name: n for name, _, n in rows}
            cur.execute("SELECT current_database()")
            (ours,) = cur.fetchone()
            cur.execute("SELECT pg_backend_pid()")
            (backend,) = cur.fetchone()
            fields = stat(backend)  # read once, while the backend lives
            postmaster = int(fields[1]) if fields else None  # our backend's parent
            statements = statement_ms = None
            cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'")
            if cur.fetchone():
                cur.execute(
                    "SELECT queryid, query, calls, rows, total_exec_time FROM pg_stat_statements"
                    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                )
                got = [row for row in cur.fetchall() if not _BENCH_QUERY.search(row[1])]
                statements = {(qid, query): (calls, n) for qid, query, calls, n, _ in got}
                statement_ms = {(qid, query): ms for qid, query, _, _, ms in got}  # time executing, in ms
    return {
        "tables": tables,
        "tables_split": split,
        "xacts": xacts,
        "sessions": sessions,
        "database": ours,
        "postmaster": postmaster,
        "statements": statements,
        "statement_ms": statement_ms,
    }


def statement_kind(query: str, tables: set[str]) -> str:
    """`VERB table` of a statement as pg_stat_statements normalised it: the verb of its data statement (a
    WITH's main statement), the table named first in it (an INSERT's or UPDATE's target, a SELECT's first
    FROM: Django qualifies columns by their table); transaction control and settings under their verb."""
    head = query.lstrip().split(None, 1)
    verb = head[0].upper().rstrip(";") if head else "?"
    if verb == "WITH":
        writes = [f"{v.split()[0].upper()} {t.removeprefix('crawladmin_')}" for v, t in _WRITE.findall(query)]
        if len(writes) > 1:  # several writes in one statement (crawlcore.db.chain)
            return "one statement: " + " + ".join(writes)
        verb = writes[0].split()[0] if writes else "SELECT"
    if verb in ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "START", "END"):
        return "transaction control (BEGIN/COMMIT/SAVEPOINT/RELEASE/ROLLBACK)"
    table = next((w for w in _WORD.findall(query.lower()) if w in tables), None)
    if table is not None and "FOR KEY SHARE OF x" in query:
        # PostgreSQL's own foreign-key check, one per row written, at commit (Django's constraints are
        # deferred): not a statement any client sent.
        return f"{FK_CHECK} {table.removeprefix('crawladmin_')}"
    if table is None:  # no table: name what it runs (an advisory lock, set_config, …)
        return " ".join(query.split())[:60]
    return f"{verb} {table.removeprefix('crawladmin_')}"


def pg_statements(before: dict, after: dict) -> dict[str, tuple[int, int]] | None:
    """Statements of our database between two snapshots, by statement_kind: (calls, rows)."""
    if after["statements"] is None:
        return None
    tables = set(after["tables"])
    out: dict[str, list[int]] = {}
    for key, (calls, n) in after["statements"].items():
        c0, n0 = (before["statements"] or {}).get(key, (0, 0))
        if calls - c0:
            kind = out.setdefault(statement_kind(key[1], tables), [0, 0])
            kind[0] += calls - c0
            kind[1] += n - n0
    return {k: (c, n) for k, (c, n) in sorted(out.items(), key=lambda kv: -kv[1][0])}


def pg_top_statements(before: dict, after: dict, n: int = 40) -> list[tuple[int, int, str]]:
    """The `n` statements of our database called most often between two snapshots: (calls, rows, text)."""
    if after["statements"] is None:
        return []
    old = before["statements"] or {}
    out = []
    for key, (calls, rows) in after["statements"].items():
        c0, r0 = old.get(key, (0, 0))
        if calls - c0:
            out.append((calls - c0, rows - r0, " ".join(key[1].split())[:400]))
    return sorted(out, reverse=True)[:n]


def pg_rows_split(before: dict, after: dict) -> dict[str, tuple[int, int, int]]:
    """Rows inserted, updated and deleted per table between two snapshots."""
    out = {}
    for table, now in sorted(after["tables_split"].items()):
        then = before["tables_split"].get(table, (0, 0, 0))
        delta = tuple(a - b for a, b in zip(now, then, strict=True))
        if any(delta):
            out[table.removeprefix("crawladmin_")] = delta
    return out


def pg_xacts(before: dict, after: dict) -> tuple[int, int]:
    """Transactions of our database and of all the others between two snapshots (databases created meanwhile
    count in full; dropped ones, whose statistics are gone, not at all)."""
    delta = {db: n - before["xacts"].get(db, 0) for db, n in after["xacts"].items()}
    ours = delta.pop(after["database"], 0)
    return ours, sum(delta.values())


def pg_rows(before: dict, after: dict) -> dict[str, int]:
    return {
        t: n - before["tables"].get(t, 0) for t, n in sorted(after["tables"].items()) if n - before["tables"].get(t, 0)
    }


# --------------------------------------------------------------------------------------------------
# The web


def measure_web(spec: WebSpec, seconds: float = 3.0) -> dict:
    """Requests/s of the nginx alone on one page: keep-alive and a fresh connection per request."""
    url = Web(spec).url(0, 1)
    wrk = shutil.which("wrk")
    out = {"tool": "wrk" if wrk else "python"}
    if wrk:
        for label, extra in (("keepalive_rps", []), ("fresh_connection_rps", ["-H", "Connection: close"])):
            text = subprocess.run(
                [wrk, "-t", "1", "-c", "32", "-d", f"{seconds:g}s", *extra, url],
                capture_output=True,
                text=True,
                timeout=seconds + 30,
            ).stdout
            m = re.search(r"Requests/sec:\s+([\d.]+)", text)
            out[label] = float(m.group(1)) if m else None
        return out
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    n, deadline = 0, time.monotonic() + seconds
    t = time.perf_counter()
    while time.monotonic() < deadline and n < 200_000:
        con.request("GET", parts.path)
        con.getresponse().read()
        n += 1
    con.close()
    out["keepalive_rps"] = round(n / (time.perf_counter() - t), 1)
    return out


def web_requests(nginx: NginxWeb, offset: int, agent: str) -> dict:
    """What one crawler asked nginx, from the access log after `offset`."""
    rows = [r for r in nginx.requests_since(offset) if agent in r[4]]
    per_url = Counter((addr, path) for addr, _m, path, _s, _a in rows)
    return {
        "requests": len(rows),
        "private": sum(1 for r in rows if r[2].startswith("/private/")),
        "robots": sum(1 for r in rows if r[2] == "/robots.txt"),
        # Ours looks for a sitemap once per server (the generated web has none: 404); Scrapy's
        # CrawlSpider does not. Counted apart, not as a page.
        "sitemaps": sum(1 for r in rows if r[2] == "/sitemap.xml"),
        "pages": sum(
            1 for (_a, p) in per_url if p not in ("/robots.txt", "/sitemap.xml") and not p.startswith("/private/")
        ),
        "repeated": sum(n - 1 for n in per_url.values() if n > 1),
        "not_200": sum(1 for r in rows if r[3] != 200),
    }


# --------------------------------------------------------------------------------------------------
# Ours


def _ours_env(args, db: str, broker: str, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    env.update(
        DATABASE_URL=db,
        CELERY_BROKER_URL=broker,
        DJANGO_SECRET_KEY="bench-throughput-" + uuid.uuid4().hex * 2,
        CRAWLADMIN_DATA_DIR=str(tmp),
        CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
        CRAWL_DEFAULT_DELAY="0",
        CRAWL_SERVER_CONCURRENCY=str(args.slots),
    )
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    return env


def run_ours(args, web: Web, nginx: NginxWeb, tmp: Path, *, after=None) -> dict:
    """One crawl of ours (step 2 of the module docstring). `after(env)`, if given, runs in the crawl's database
    once the crawl is done and counted (bench.seed003 ranks it there); its result is returned under "after"."""
    from bench.harness.db import manage
    from testweb.cluster import Processes, redis_server

    workers = parse_workers(args.workers)
    with _database(args, tmp) as db, redis_server(tmp) as broker:
        env = _ours_env(args, db, broker, tmp)
        t = time.perf_counter()
        manage(env, "migrate", "--noinput")
        migrate_s = time.perf_counter() - t
        if _pg_mode(args) == "private":
            _statements_on(db)
        profiling = tmp / "profile" if getattr(args, "profile", False) else None
        with Processes(env, tmp) as procs:
            names = [f"w{i}-{w.name}" for i, w in enumerate(workers)]
            pids = {
                n: procs.worker(n, w.queues, concurrency=w.concurrency, pool=w.pool).pid
                for n, w in zip(names, workers, strict=True)
            }
            beat = procs.start("beat", "beat", "-l", "WARNING", "-s", str(tmp / "beat-schedule")).pid
            wait_for_workers(broker, names)
            redis = child_named("redis-server")
            pg0 = pg_snapshot(db)
            roots = {**pids, "beat": beat, "redis": redis, "postgres": pg0["postmaster"], "nginx": nginx.pid}
            cpu0 = {k: tree_cpu(p) for k, p in roots.items() if p}
            machine0, offset = machine_cpu(), nginx.log_size()
            rss_start = {n: tree_rss(p) for n, p in pids.items()}
            cmd = [sys.executable, "manage.py", "crawl", "--json", "--no-progress"]
            cmd += ["--max-seconds", str(args.max_seconds)]
            if args.dispatch_only:
                cmd.append("--dispatch-only")
            with ExitStack() as sampling:
                if profiling:  # py-spy samples the workers and beat from outside for the crawl's span
                    from bench.cpu_profile import Sampler

                    spy = sampling.enter_context(Sampler(profiling, {**pids, "beat": beat}))
                with BackendSampler(pg0["postmaster"], db.rsplit("/", 1)[1]) as backends:
                    code, wall, crawl_cpu, sampler = run_timed(
                        cmd + web.seeds(), env=env, log=tmp / "crawl.log", timeout=args.max_seconds + 300, watch=pids
                    )
            cpu1 = {k: tree_cpu(p) for k, p in roots.items() if p}
            machine1 = machine_cpu()
            rss_end = {n: tree_rss(p) for n, p in pids.items()}
            logs = {n: procs.log(n) for n in [*names, "beat"]}
        time.sleep(1.5)  # backends flush their statistics when they end (the workers just closed them)
        pg1 = pg_snapshot(db)
        text = (tmp / "crawl.log").read_text()
        if code != 0:
            raise BenchError(f"manage.py crawl exited {code}:\n{text[-3000:]}")
        summary = json.loads(text[text.index("{") :])
        found = _count_ours(db)
        after_result = after(env) if after is not None else None
    cpu = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu1}
    cpu["crawl command"] = round(crawl_cpu, 2)
    seconds = summary["seconds"]
    pages = found["pages"]
    rows = pg_rows(pg0, pg1)
    statements = pg_statements(pg0, pg1)
    sent = None if statements is None else sum(c for k, (c, _) in statements.items() if not k.startswith(FK_CHECK))
    counted = sum(v for k, v in cpu.items() if k != "nginx")
    pg_split = backends.breakdown(cpu.get("postgres", 0.0))
    if _pg_mode(args) == "private":
        # Every process of a private cluster is ours, autovacuum workers included (their titles do not name the
        # database as a backend's does, so the sampler would count them as "others").
        pg_split["ours_estimate"] = cpu.get("postgres", 0.0)
    ours_only = counted - cpu.get("postgres", 0.0) + pg_split["ours_estimate"]
    out = {
        "crawler": "ours",
        "stopped": summary["stopped"],
        "pages": pages,
        "seconds": seconds,
        "command_wall_s": round(wall, 2),
        "migrate_s": round(migrate_s, 1),
        "pages_per_s": pages / seconds if seconds else 0.0,
        "cpu_s": round(counted, 2),
        "cpu_s_per_page": counted / pages if pages else None,
        "cpu_by_process": cpu,
        "postgres_cpu_split_s": pg_split,
        "cpu_s_per_page_our_backends": ours_only / pages if pages else None,
        "peak_rss_mb": sampler.peak_total / MB,  # of all the workers together
        "rss_by_worker_mb": {
            n: {"start": rss_start[n] / MB, "peak": sampler.peak[n] / MB, "end": rss_end[n] / MB} for n in pids
        },
        "rss_workers_mb_at": {f"{int(f * 100)}%": sampler.at_fraction(f) / MB for f in (0.1, 0.5, 1.0)},
        "peak_pss_mb": sampler.peak_pss_total / MB,
        "pss_workers_mb_at": {f"{int(f * 100)}%": sampler.at_fraction(f, pss=True) / MB for f in (0.1, 0.5, 1.0)},
        "rows_written": sum(rows.values()),
        "rows_per_page": sum(rows.values()) / pages if pages else None,
        "rows_by_table_split": pg_rows_split(pg0, pg1),
        "statements": statements,
        "top_statements": pg_top_statements(pg0, pg1),  # in --json only
        "statements_total": sent,
        "statements_per_page": sent / pages if sent is not None and pages else None,
        "fk_checks_per_page": (
            sum(c for k, (c, _) in statements.items() if k.startswith(FK_CHECK)) / pages
            if statements is not None and pages
            else None
        ),
        "transactions_per_page": pg_xacts(pg0, pg1)[0] / pages if pages else None,
        "rows_per_s": sum(rows.values()) / seconds if seconds else 0.0,
        "rows_by_table": rows,
        "our_db_transactions": pg_xacts(pg0, pg1)[0],
        "our_db_connections": pg1["sessions"][pg1["database"]] - pg0["sessions"][pg0["database"]],
        "other_db_transactions": pg_xacts(pg0, pg1)[1],
        "machine_busy_share": _busy_share(machine0, machine1),
        "found": found,
        "search_index": env.get("SEARCH_INDEX", "true").strip().lower() not in ("false", "0", "no", "off"),
        "requests": web_requests(nginx, offset, "crawladmin"),
        "log_errors": {n: len(re.findall(r"Traceback|\bERROR\b", t)) for n, t in logs.items()},
        "after": after_result,
    }
    if profiling:
        out["profile"] = _profile(out, profiling, [*pids, "beat"], spy.sampler_s, pg0, pg1)
    return out


def _profile(r: dict, directory: Path, names: list[str], sampler_s: float, pg0: dict, pg1: dict) -> dict:
    """--profile: the run's CPU a page by process, statement and Python function (bench.cpu_profile)."""
    from bench import cpu_profile

    return {
        "processes": cpu_profile.processes_ms(r),
        "statements": cpu_profile.statement_times(pg0, pg1, r["pages"], tables=set(pg1["tables"]), kind=statement_kind),
        "functions": cpu_profile.function_times(
            directory, {n: r["cpu_by_process"][n] for n in names}, r["pages"], sampler_s=sampler_s
        ),
    }


def _pg_mode(args) -> str:
    """--pg; "private" for a caller that builds its own arguments (bench.seed003)."""
    return getattr(args, "pg", "private")


@contextmanager
def _database(args, tmp: Path) -> Iterator[str]:
    """The crawl's database: on a private cluster of its own (--pg private) or a fresh one on the shared
    server (--pg shared, CRAWLADMIN_TEST_PG)."""
    if _pg_mode(args) == "shared":
        from bench.harness.db import fresh_database

        with fresh_database("tput") as db:
            yield db
        return
    from testweb.cluster import private_postgres

    with private_postgres(tmp, conf=PRIVATE_PG) as pg:
        yield pg.url


def _statements_on(db: str) -> None:
    import psycopg2

    with closing(psycopg2.connect(db)) as con:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            cur.execute("SELECT pg_stat_statements_reset()")


def _busy_share(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    busy, total = after[0] - before[0], after[1] - before[1]
    return round(busy / total, 3) if total else None


def _count_ours(db: str) -> dict:
    import psycopg2

    with closing(psycopg2.connect(db)) as con, con.cursor() as cur:
        cur.execute("SELECT state, exclusion_reason, count(*) FROM crawladmin_url GROUP BY 1, 2")
        states: Counter = Counter()
        for state, reason, n in cur.fetchall():
            states[f"excluded: {reason}" if reason else state] += n
        out = {"urls": dict(states), "visited": states["visited"]}
        for key, sql in (
            ("pages", "SELECT count(*) FROM crawladmin_page"),
            ("unextracted", "SELECT count(*) FROM crawladmin_page WHERE extracted_at IS NULL"),
            # The full-text index, built in batches after extraction (crawlcore.services.search_index).
            ("unindexed", "SELECT count(*) FROM crawladmin_page WHERE ix_body IS NOT NULL"),
            ("without_vector", "SELECT count(*) FROM crawladmin_page WHERE search_vector IS NULL"),
            ("duplicates", "SELECT count(*) FROM crawladmin_page WHERE duplicate_of_id IS NOT NULL"),
            ("links", "SELECT count(*) FROM crawladmin_link"),
            ("checks", "SELECT count(*) FROM crawladmin_statuscheck"),
            ("leased", "SELECT count(*) FROM crawladmin_url WHERE lease_owner <> ''"),
        ):
            cur.execute(sql)
            out[key] = cur.fetchone()[0]
    return out


def check_ours(r: dict, expected: dict) -> list[str]:
    f, q = r["found"], r["requests"]
    problems = []

    def want(label: str, got, exp) -> None:
        if got != exp:
            problems.append(f"{label}: {got:,} (expected {exp:,})")

    if r["stopped"] != "done":
        problems.append(f"crawl stopped: {r['stopped']} (expected done)")
    want("Visited URLs", f["visited"], expected["pages"])
    want("Page rows", f["pages"], expected["pages"])
    want("URLs excluded by robots.txt", f["urls"].get("excluded: robots.txt", 0), expected["excluded"])
    other = {k: v for k, v in f["urls"].items() if k not in ("visited", "excluded: robots.txt")}
    if other:
        problems.append(f"URLs in other states: {other}")
    want("Link rows", f["links"], expected["links"])
    want("unextracted pages", f["unextracted"], 0)
    want("pages waiting for their search vector", f["unindexed"], 0)
    if r.get("search_index", True):
        want("pages without a search vector", f["without_vector"], 0)
    want("leased URLs", f["leased"], 0)
    want("StatusCheck rows vs nginx requests", f["checks"], q["requests"])
    want("pages requested", q["pages"], expected["pages"])
    want("robots.txt requests", q["robots"], expected["robots"])
    want("sitemap requests (one per server)", q["sitemaps"], expected["robots"])
    want("requests repeated", q["repeated"], 0)
    want("requests of /private/ (robots.txt disallows)", q["private"], 0)
    errors = {n: c for n, c in r["log_errors"].items() if c}
    if errors:
        problems.append(f"errors in worker logs: {errors}")
    return problems


# --------------------------------------------------------------------------------------------------
# Scrapy


def run_scrapy(args, web: Web, nginx: NginxWeb, tmp: Path) -> dict:
    items_path, stats_path = tmp / "items.jl", tmp / "scrapy-stats.json"
    nginx_cpu0, machine0, offset = tree_cpu(nginx.pid), machine_cpu(), nginx.log_size()
    cmd = [sys.executable, "-m", "bench.baselines.scrapy_spider", "--out", str(items_path), "--stats", str(stats_path)]
    cmd += ["--slots", str(args.slots), "--max-seconds", str(args.max_seconds), *web.seeds()]
    code, wall, cpu, sampler = run_timed(cmd, env=None, log=tmp / "scrapy.log", timeout=args.max_seconds + 300)
    nginx_cpu = tree_cpu(nginx.pid) - nginx_cpu0
    if code != 0 or not stats_path.exists():
        raise BenchError(f"Scrapy exited {code}:\n{(tmp / 'scrapy.log').read_text()[-3000:]}")
    stats = json.loads(stats_path.read_text())
    urls: Counter = Counter()
    statuses: Counter = Counter()
    with open(items_path) as f:
        for line in f:
            item = json.loads(line)
            urls[item["url"]] += 1
            statuses[item["status"]] += 1
    seconds = float(stats["elapsed_time_seconds"])
    pages = len(urls)
    return {
        "crawler": "scrapy",
        "stopped": stats.get("finish_reason"),
        "pages": pages,
        "seconds": round(seconds, 2),
        "command_wall_s": round(wall, 2),
        "pages_per_s": pages / seconds if seconds else 0.0,
        "cpu_s": round(cpu, 2),
        "cpu_s_per_page": cpu / pages if pages else None,
        "cpu_by_process": {"scrapy": round(cpu, 2), "nginx": round(nginx_cpu, 2)},
        "peak_rss_mb": sampler.peak["command"] / MB,
        "peak_pss_mb": sampler.peak_pss_total / MB,
        "rows_per_s": None,
        "items": sum(urls.values()),
        "statuses": {str(k): v for k, v in statuses.items()},
        "robots_forbidden": stats.get("robotstxt/forbidden", 0),
        "machine_busy_share": _busy_share(machine0, machine_cpu()),
        "requests": web_requests(nginx, offset, "scrapy-bench"),
    }


def check_scrapy(r: dict, expected: dict) -> list[str]:
    q = r["requests"]
    problems = []
    for label, got, exp in (
        ("finish reason", r["stopped"], "finished"),
        ("distinct pages in the feed", r["pages"], expected["pages"]),
        ("items", r["items"], expected["pages"]),
        ("pages requested", q["pages"], expected["pages"]),
        ("robots.txt requests", q["robots"], expected["robots"]),
        ("requests repeated", q["repeated"], 0),
        ("requests of /private/ (robots.txt disallows)", q["private"], 0),
    ):
        if got != exp:
            problems.append(f"{label}: {got} (expected {exp})")
    return problems


# --------------------------------------------------------------------------------------------------
# Report


def _median(runs: list[dict], key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def _fmt(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def summarize(results: dict[str, list[dict]]) -> dict:
    keys = ("pages", "seconds", "pages_per_s", "cpu_s_per_page", "cpu_s_per_page_our_backends", "peak_rss_mb")
    keys += ("peak_pss_mb", "rows_per_s", "rows_per_page", "statements_per_page", "fk_checks_per_page")
    keys += ("transactions_per_page",)
    med = {name: {k: _median(runs, k) for k in keys} for name, runs in results.items() if runs}
    ratios = {}
    if "ours" in med and "scrapy" in med:
        o, s = med["ours"], med["scrapy"]
        ratios["pages_per_s"] = o["pages_per_s"] / s["pages_per_s"] if s["pages_per_s"] else None
        for key in ("cpu_s_per_page", "cpu_s_per_page_our_backends"):
            ratios[key] = o[key] / s["cpu_s_per_page"] if o[key] and s["cpu_s_per_page"] else None
        for key in ("peak_rss_mb", "peak_pss_mb"):  # our workers (a forked parser counts its shared pages in RSS)
            ratios[key] = o[key] / s[key] if o.get(key) and s.get(key) else None
    return {"medians": med, "ratios": ratios}


def print_table(summary: dict, runs: int) -> None:
    med, ratios = summary["medians"], summary["ratios"]
    cols = [c for c in ("ours", "scrapy") if c in med]
    print(f"\n== throughput, medians of {runs} run(s) ==")
    print(f"{'':<22}" + "".join(f"{c:>14}" for c in cols) + (f"{'ours ÷ scrapy':>16}" if ratios else ""))
    rows = (
        ("pages", "pages", ",.0f", None),
        ("seconds", "seconds", ",.1f", None),
        ("pages/s", "pages_per_s", ",.1f", "pages_per_s"),
        ("CPU ms/page", "cpu_s_per_page", ".2f", "cpu_s_per_page"),
        ("  pg: our db (est.)", "cpu_s_per_page_our_backends", ".2f", "cpu_s_per_page_our_backends"),
        ("peak RSS MB", "peak_rss_mb", ",.0f", "peak_rss_mb"),
        ("peak PSS MB", "peak_pss_mb", ",.0f", "peak_pss_mb"),
        ("DB rows written/s", "rows_per_s", ",.0f", None),
        ("DB rows/page", "rows_per_page", ",.1f", None),
        ("DB statements/page", "statements_per_page", ",.2f", None),
        ("  FK checks/page", "fk_checks_per_page", ",.2f", None),
        ("DB transactions/page", "transactions_per_page", ",.2f", None),
    )
    for label, key, spec, ratio in rows:
        scale = 1000 if key.startswith("cpu_s_per_page") else 1
        cells = "".join(f"{_fmt(None if med[c][key] is None else med[c][key] * scale, spec):>14}" for c in cols)
        r = f"{_fmt(ratios.get(ratio), '.2f') + '×':>16}" if ratio and ratio in ratios else ""
        print(f"{label:<22}{cells}{r}")


def print_writes(r: dict) -> None:
    """Rows and statements per page, by table and by statement."""
    pages = r["pages"] or 1
    print(
        f"   rows per page {r['rows_written'] / pages:.2f} (inserted/updated/deleted): "
        + ", ".join(
            f"{t} {'/'.join(f'{x / pages:.2f}' for x in v)}"
            for t, v in sorted(r["rows_by_table_split"].items(), key=lambda kv: -sum(kv[1]))
        )
    )
    statements = r["statements"]
    if statements is None:
        print(f"   statements: not counted (--pg shared); transactions per page {r['transactions_per_page']:.2f}")
        return
    print(
        f"   statements sent {r['statements_total']:,} = {r['statements_total'] / pages:.2f} per page "
        f"(pg_stat_statements; and PostgreSQL's own foreign-key checks {r['fk_checks_per_page']:.2f} per page), "
        f"transactions per page {r['transactions_per_page']:.2f}; per page (rows per statement):"
    )
    for kind, (calls, rows) in statements.items():
        if calls / pages >= 0.005:
            print(f"      {calls / pages:7.3f}  {kind} ({rows / calls:,.1f})")
    rest = [(c, n) for k, (c, n) in statements.items() if c / pages < 0.005]
    if rest:
        print(f"      {sum(c for c, _ in rest) / pages:7.3f}  {len(rest)} other kinds, each under 0.005 per page")


def print_run(r: dict, problems: list[str], n: int) -> None:
    name = r["crawler"]
    print(
        f"\n-- {name}, run {n}: {r['pages']:,} pages in {r['seconds']:.1f} s = {r['pages_per_s']:.1f} pages/s; "
        f"CPU {r['cpu_s']:.1f} s = {1000 * (r['cpu_s_per_page'] or 0):.2f} ms/page; "
        f"peak RSS {r['peak_rss_mb']:.0f} MB; machine busy {100 * (r['machine_busy_share'] or 0):.0f} %"
    )
    print("   CPU s by process: " + ", ".join(f"{k} {v}" for k, v in r["cpu_by_process"].items()))
    if name == "ours":
        print(
            f"   rows written {r['rows_written']:,} = {r['rows_per_s']:,.0f}/s: "
            + ", ".join(f"{k.removeprefix('crawladmin_')} {v:,}" for k, v in r["rows_by_table"].items())
        )
        print_writes(r)
        if r.get("profile"):
            from bench.cpu_profile import print_profile

            print_profile(r["profile"])
        print(
            "   worker RSS MB (start/peak/end): "
            + ", ".join(
                f"{n} {v['start']:.0f}/{v['peak']:.0f}/{v['end']:.0f}" for n, v in r["rss_by_worker_mb"].items()
            )
            + "; all workers at 10/50/100 % of the crawl: "
            + "/".join(f"{v:.0f}" for v in r["rss_workers_mb_at"].values())
            + " (PSS, shared pages counted once: "
            + "/".join(f"{v:.0f}" for v in r["pss_workers_mb_at"].values())
            + f", peak {r['peak_pss_mb']:.0f})"
        )
        others = r["other_db_transactions"]
        print(
            f"   PostgreSQL: 'postgres' above is every server process; our database committed "
            f"{r['our_db_transactions']:,} transactions in {r['our_db_connections']:,} connections, "
            + (
                f"OTHER DATABASES {others:,} meanwhile, whose CPU is in it too"
                if others
                else "no other database any (the server was ours alone)"
            )
            + ". Its CPU s by process (sampled): "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["postgres_cpu_split_s"].items())
            + f"; with the estimate for ours in place of all: {1000 * (r['cpu_s_per_page_our_backends'] or 0):.2f}"
            " ms/page"
        )
    else:
        print(f"   items {r['items']:,}, statuses {r['statuses']}, robots.txt forbade {r['robots_forbidden']} requests")
    q = r["requests"]
    print(
        f"   nginx: {q['requests']:,} requests ({q['robots']} robots.txt, {q['private']} /private/, "
        f"{q['repeated']} repeated, {q['not_200']} not 200)"
    )
    if problems:
        print(f"   !!! MISMATCH ({name}, run {n}):")
        for p in problems:
            print(f"   !!!   {p}")
    else:
        print("   checks: every public page once, /private/ never, counts as expected")


# --------------------------------------------------------------------------------------------------


def _code_state() -> dict:
    """Which code the crawl ran: the commit and the files changed since (the figures belong to both)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD"), "changed": git("status", "--porcelain").splitlines()}


def _stop_on_sigterm() -> None:
    """SIGTERM (and SIGINT, even when a non-interactive shell started us with it ignored) unwinds the stack,
    so every process started is stopped by its PID and the database dropped."""

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def main(argv: list[str] | None = None) -> int:
    _stop_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--pages", type=int, default=2500, help="public pages per server")
    ap.add_argument("--links", type=int, default=30, help="links per page")
    ap.add_argument("--onsite", type=float, default=0.8, help="share of links to the page's own server")
    ap.add_argument("--page-bytes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--net", default="127.0.1", help="servers are NET.1 … NET.<servers>")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--only", choices=("ours", "scrapy"))
    ap.add_argument("--keep-web", type=Path, help="write the web here (or reuse it) instead of a temp directory")
    ap.add_argument("--slots", type=int, default=2, help="requests in flight per server, for both crawlers")
    ap.add_argument(
        "--workers",
        help="ours: QUEUES:POOL:N,… (default: load:threads:<servers×slots>,"
        "extract+housekeeping:threads:<2×cores+2>; before the fetch-engine round ...,extract:prefork:<2×cores>,"
        "housekeeping:threads:2)",
    )
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="ours: extra settings")
    ap.add_argument("--dispatch-only", action="store_true", help="ours: the crawl command leaves dispatching to beat")
    ap.add_argument("--nginx-workers", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=3600, help="a crawl stops here (and counts as failed)")
    ap.add_argument(
        "--pg",
        choices=("private", "shared"),
        default="private",
        help="ours: a private PostgreSQL cluster with pg_stat_statements (statements per page), or a fresh "
        "database on the shared server (CRAWLADMIN_TEST_PG; no statement counts)",
    )
    ap.add_argument("--no-frontier", action="store_true", help="skip the 1,000,000-URL frontier figures")
    ap.add_argument("--frontier-urls", type=int, default=1_000_000)
    ap.add_argument(
        "--profile",
        action="store_true",
        help="ours: where a page's CPU goes by process, statement (pg_stat_statements) and Python function "
        "(py-spy, from outside: needs ptrace); printed, and kept in --json",
    )
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    args.workers = args.workers or default_workers(args.servers, args.slots)
    try:
        parse_workers(args.workers)  # fail early on a bad layout
    except argparse.ArgumentTypeError as exc:
        ap.error(str(exc))
    spec = WebSpec(
        servers=args.servers,
        pages=args.pages,
        links=args.links,
        onsite=args.onsite,
        page_bytes=args.page_bytes,
        seed=args.seed,
        net=args.net,
        port=args.port,
    )
    if find_nginx() is None:
        print("nginx is not installed (Debian: apt-get install -y nginx-light)", file=sys.stderr)
        return 2
    if args.only != "scrapy" and shutil.which("redis-server") is None:
        print("redis-server is not installed", file=sys.stderr)
        return 2
    if not port_is_free(spec):
        print(f"something already listens on {spec.net}.x:{spec.port}: choose another --port or --net", file=sys.stderr)
        return 2
    web = Web(spec)
    expected = web.expected()
    crawlers = [args.only] if args.only else ["ours", "scrapy"]
    report: dict = {"spec": asdict(spec), "expected": expected, "args": {k: str(v) for k, v in vars(args).items()}}
    report["code"] = _code_state()
    results: dict[str, list[dict]] = {c: [] for c in crawlers}
    failed = False
    print(
        f"bench.throughput: {spec.servers} servers × {spec.pages:,} pages, {spec.links} links/page "
        f"({spec.onsite:.0%} on-site), {args.slots} slot(s) per server; ours: --workers {args.workers}"
        + (f" {' '.join(args.env)}" if args.env else "")
    )
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    code = report["code"]
    print(f"code: {code['commit']}" + (f" + {len(code['changed'])} changed files" if code["changed"] else ""))
    with ExitStack() as stack:
        tmp = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
        stack.callback(shutil.rmtree, tmp, True)
        www = args.keep_web or tmp / "www"
        written = ensure_written(www, spec)
        print(
            f"web: {www} "
            + (
                f"written: {written['files']:,} pages, {written['bytes'] / MB:,.0f} MB in {written['seconds']} s"
                if written
                else "reused (same manifest)"
            )
        )
        report["web"] = {"dir": str(www), "written": written}
        (tmp / "nginx").mkdir()
        nginx = stack.enter_context(NginxWeb(www, spec, tmp / "nginx", workers=args.nginx_workers))
        alone = measure_web(spec)
        report["web_alone"] = alone
        print(
            f"nginx alone ({args.nginx_workers} worker, {alone['tool']}, one 10 KB page): "
            + ", ".join(f"{k.removesuffix('_rps')} {v:,.0f} requests/s" for k, v in alone.items() if k != "tool")
        )
        for n in range(1, args.runs + 1):
            for name in crawlers:
                run_dir = tmp / f"{name}-{n}"
                run_dir.mkdir()
                try:
                    r = (run_ours if name == "ours" else run_scrapy)(args, web, nginx, run_dir)
                except (BenchError, RuntimeError, subprocess.SubprocessError) as exc:
                    print(f"\n!!! {name}, run {n} FAILED: {exc}")
                    failed = True
                    continue
                problems = (check_ours if name == "ours" else check_scrapy)(r, expected)
                r["problems"] = problems
                failed |= bool(problems)
                print_run(r, problems, n)
                results[name].append(r)
        report["runs"] = results
    summary = summarize(results)
    report.update(summary)
    print_table(summary, args.runs)
    if "ours" in crawlers and not args.no_frontier:
        from bench import frontier

        print(f"\n== frontier at scale: {args.frontier_urls:,} URLs ==", flush=True)
        report["frontier"] = frontier.run(urls=args.frontier_urls)
        frontier.print_report(report["frontier"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nfigures written to {args.json}")
    if failed:
        print("\n!!! at least one crawl did not match the web: see the MISMATCH lines above")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
