"""Seed 001's experiment (§IV.2.2, table 4.2): our agents against a sequential robot on a web with dead links.

The paper crawled 10 university sites for 6 h with a multi-agent robot and with a "multi-process
sequential" robot, both under the same per-phase timeouts (connect 15 s, header 10 s, body 20 s), and
counted URLs collected per hour: 151,797 vs 96,210 after 6 h; the hourly ratios 2.7, 2.5, 3.0, 2.3,
2.0, 1.6 average to the 2.35x it reports. The sequential robot lost its time on "dead links": a
request to a host that is down hangs until the timeout, and its loader re-checks such URLs itself.

Here: a local test web (testweb) of ``--servers`` servers on 127.0.0.x, of which ``--dead-share`` are
dead (the live ones link to them like to any other server), crawled for the same ``--seconds`` by
(a) ``manage.py crawl`` (our agents; embedded mode, or ``--mode cluster`` with PostgreSQL, Redis and
real celery workers) and (b) ``bench.sequential`` (one URL at a time, in-line re-checks). Timeouts are
the paper's scaled by ``--scale`` (0.1: 1.5 / 1 / 2 s), politeness delay 0 for both against loopback.

    python -m bench.agents_vs_sequential [--runs 2] [--seconds 60] [--servers 20] [--dead-share 0.2]

A benchmark prints figures; it asserts nothing (DESIGN.md §11).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from testweb import SiteSpec, TestWebServer, Web

ROOT = Path(__file__).resolve().parent.parent

PAPER_TIMEOUTS = (15.0, 10.0, 20.0)  # connect, header, body (seed 001, table 4.1)
PAPER_HOURLY = {  # cumulative URLs after 1..6 h (table 4.2)
    "agents": (19_681, 60_471, 110_268, 135_310, 150_725, 151_797),
    "sequential": (7_240, 23_883, 36_223, 57_452, 74_548, 96_210),
}
PAPER_RATIO = 2.35
FIRST_OCTET = 60  # 127.0.0.60 ..: away from the tests' webs (100, 170), which may run at the same time
SPARK = "▁▂▃▄▅▆▇█"


# --------------------------------------------------------------------------------------------------
# The web: testweb with some of its servers replaced by dead ones


class DeadServer:
    """A listener on a server's address that never answers.

    kind "connect": listen(0) and never accept; the benchmark fills the one-slot accept queue itself,
    after which the kernel drops every SYN, so clients wait out their *connect* timeout, like a host
    that is down (seed 001: "Socket() ... 180 s delay"). kind "accept": accept and never send a byte,
    so clients connect at once and wait out their *header* timeout, like testweb's silent server.
    """

    def __init__(self, host: str, port: int, kind: str) -> None:
        self.kind = kind
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if kind == "connect":
            self.sock.listen(0)
            filler = socket.create_connection((host, port), timeout=2)  # takes the only accept-queue slot
            self._held.append(filler)
        else:
            self.sock.listen(128)
            self.sock.settimeout(0.1)
            self._thread = threading.Thread(target=self._accept, name=f"bench-dead-{host}", daemon=True)
            self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():  # bounded by close()
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.sock.close()
        for conn in self._held:
            conn.close()


def _silence(web: TestWebServer, host: str, kind: str) -> DeadServer:
    """Stop testweb's server on ``host`` and put a dead listener on its address.

    testweb has no public switch for "this normal server is dead and slow to say so" (``set_down`` closes
    connections at once: a fast failure), so this reaches into its list of HTTP servers; it fails loudly
    if that internal changes.
    """
    servers = [s for s in getattr(web, "_http", []) if getattr(s, "host", None) == host]
    if len(servers) != 1:
        raise RuntimeError(f"cannot find testweb's server for {host}: testweb internals changed")
    srv = servers[0]
    srv.shutdown()
    srv.close_connections()
    srv.server_close()
    web._http.remove(srv)  # noqa: SLF001 - see the docstring
    return DeadServer(host, web.port, kind)


class _ModelWithDead(Web):
    """testweb's model with the dead servers treated like its silent one: what a crawl can reach."""

    def __init__(self, spec: SiteSpec, port: int, dead: set[str]) -> None:
        super().__init__(spec, port)
        self._dead = dead

    def is_silent(self, host: str) -> bool:
        return host in self._dead or super().is_silent(host)


@dataclass
class BenchWeb:
    server: TestWebServer
    seeds: list[str]
    dead: list[str]
    reachable: int  # URLs a crawl can process (visited + failed; robots-excluded not counted)


@contextmanager
def bench_web(spec: SiteSpec, n_dead: int, kind: str):
    with ExitStack() as stack:
        server = stack.enter_context(TestWebServer(spec))
        hosts = server.web.normal_hosts()
        dead = hosts[len(hosts) - n_dead :] if n_dead else []
        for host in dead:
            stack.callback(_silence(server, host, kind).close)
        model = _ModelWithDead(spec, server.port, set(dead))
        seeds = [model.url(h, "/") for h in hosts if h not in dead]
        expected = model.expected(seeds)
        reachable = sum(1 for v in expected.values() if v != "excluded")
        yield BenchWeb(server, seeds, dead, reachable)


# --------------------------------------------------------------------------------------------------
# The two robots


@dataclass
class Setup:
    seconds: float
    scale: float
    threads: int
    retries: int
    mode: str
    tmp: Path

    @property
    def timeouts(self) -> tuple[float, float, float]:
        return tuple(round(t * self.scale, 3) for t in PAPER_TIMEOUTS)  # type: ignore[return-value]


@dataclass
class RunResult:
    robot: str
    times: list[float]  # seconds after the start at which each URL was processed (first load done)
    visited: int
    failed: int
    extra: dict = field(default_factory=dict)

    def within(self, seconds: float) -> list[float]:
        return [t for t in self.times if t <= seconds]


def _crawl_env(setup: Setup, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    connect, header, body = setup.timeouts
    env.update(
        CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
        CRAWL_DEFAULT_DELAY="0",
        CRAWL_CONNECT_TIMEOUT=f"{connect:g}",
        CRAWL_HEADER_TIMEOUT=f"{header:g}",
        CRAWL_BODY_TIMEOUT=f"{body:g}",
        CRAWL_EMBEDDED_THREADS=str(setup.threads),
        **extra,
    )
    return env


def _manage_crawl(env: dict[str, str], setup: Setup, seeds: list[str]) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "crawl",
            "--json",
            "--no-progress",
            "--max-seconds",
            f"{setup.seconds:g}",
            *seeds,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=setup.seconds + 180,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"manage.py crawl failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


_EVENTS_SQL = "SELECT at, to_state FROM crawladmin_urlevent WHERE agent = 'load' AND from_state = 'init'"
_START_SQL = "SELECT MIN(created_at) FROM crawladmin_url"  # the seeds, inserted as the crawl starts


def _as_utc(value) -> datetime:
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)  # Django stores UTC in SQLite


def _agent_result(rows: list[tuple], start, summary: dict) -> RunResult:
    t0 = _as_utc(start)
    times = sorted((_as_utc(at) - t0).total_seconds() for at, _ in rows)
    visited = sum(1 for _, state in rows if state == "visited")
    return RunResult("agents", times, visited, len(rows) - visited, {"summary": summary})


def run_agents_embedded(setup: Setup, web: BenchWeb, run: int) -> RunResult:
    data = setup.tmp / f"agents-{run}"
    data.mkdir()
    summary = _manage_crawl(_crawl_env(setup, CRAWLADMIN_DATA_DIR=str(data)), setup, web.seeds)
    con = sqlite3.connect(data / "crawladmin.sqlite3")
    try:
        rows = con.execute(_EVENTS_SQL).fetchall()
        (start,) = con.execute(_START_SQL).fetchone()
    finally:
        con.close()
    return _agent_result(rows, start, summary)


def run_agents_cluster(setup: Setup, web: BenchWeb, run: int) -> RunResult:
    """PostgreSQL + a private redis-server + a load worker and an extract worker (celery processes),
    started with the integration tests' helpers; `manage.py crawl` seeds, dispatches and watches."""
    import psycopg2

    from testweb.cluster import Processes, manage, postgres_database, redis_server

    tmp = setup.tmp / f"cluster-{run}"
    tmp.mkdir()
    with postgres_database() as db, redis_server(tmp) as broker:
        env = _crawl_env(
            setup,
            DATABASE_URL=db,
            CELERY_BROKER_URL=broker,
            DJANGO_SECRET_KEY="bench-only",
            CRAWLADMIN_DATA_DIR=str(tmp),
        )
        manage(env, "migrate", "--noinput")
        with Processes(env, tmp) as procs:
            procs.worker("load", "load", concurrency=setup.threads)
            procs.worker("extract", "extract,housekeeping", concurrency=2)
            _wait_for_workers(env, ("load@", "extract@"))
            summary = _manage_crawl(env, setup, web.seeds)
        con = psycopg2.connect(db)
        try:
            with con.cursor() as cur:
                cur.execute(_EVENTS_SQL)
                rows = cur.fetchall()
                cur.execute(_START_SQL)
                (start,) = cur.fetchone()
        finally:
            con.close()
    return _agent_result(rows, start, summary)


def _wait_for_workers(env: dict[str, str], names: tuple[str, ...], attempts: int = 20) -> None:
    """Workers answer a ping before the clock starts: their start-up is not crawl time."""
    for _ in range(attempts):
        proc = subprocess.run(
            [sys.executable, "-m", "celery", "-A", "crawladmin", "inspect", "ping", "--timeout", "1"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if all(name in proc.stdout for name in names):
            return
        time.sleep(0.5)
    raise RuntimeError("celery workers did not answer a ping")


def run_sequential(setup: Setup, web: BenchWeb, run: int) -> RunResult:
    connect, header, body = setup.timeouts
    proc = subprocess.run(
        [sys.executable, "-m", "bench.sequential", "--seconds", f"{setup.seconds:g}", "--retries", str(setup.retries)]
        + ["--connect-timeout", f"{connect:g}", "--header-timeout", f"{header:g}", "--body-timeout", f"{body:g}"]
        + web.seeds,
        cwd=ROOT,
        env=_crawl_env(setup),
        capture_output=True,
        text=True,
        timeout=setup.seconds + 120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench.sequential failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout)
    processed = report.pop("processed")
    times = sorted(p["t"] for p in processed)
    visited = sum(1 for p in processed if p["outcome"] == "visited")
    return RunResult("sequential", times, visited, len(processed) - visited, report)


# --------------------------------------------------------------------------------------------------
# Figures


def bucket_counts(times: list[float], seconds: float, width: float) -> list[int]:
    n = max(1, round(seconds / width))
    counts = [0] * n
    for t in times:
        if 0 <= t <= seconds:
            counts[min(int(t // width), n - 1)] += 1
    return counts


def sparkline(values: list[float]) -> str:
    top = max(values, default=0)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))] for v in values)


def cumulative(values: list[int]) -> list[int]:
    out, total = [], 0
    for v in values:
        total += v
        out.append(total)
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def _median_int(values: list[float]) -> float:
    m = statistics.median(values)
    return int(m) if float(m).is_integer() else m


@dataclass
class RunPair:
    agents: RunResult
    sequential: RunResult


def _run_line(i: int, p: RunPair, s: float) -> str:
    a, q = p.agents.within(s), p.sequential.within(s)
    done = p.agents.extra["summary"].get("stopped") == "done"
    return (
        f"run {i}: agents {len(a)} URLs ({p.agents.visited} visited, {p.agents.failed} failed in all), "
        f"sequential {len(q)} URLs ({p.sequential.visited} visited, {p.sequential.failed} failed; "
        f"{p.sequential.extra.get('waited_on_failures', 0):.1f} s waiting on silence), "
        f"ratio {_ratio(len(a), len(q)):.2f}x" + (f"; agents finished at {max(p.agents.times):.1f} s" if done else "")
    )


def report(pairs: list[RunPair], args: argparse.Namespace, setup: Setup, web: BenchWeb) -> str:
    s, width = setup.seconds, args.bucket
    lines = []
    connect, header, body = setup.timeouts
    lines.append(
        f"seed 001, agents vs sequential: {args.servers} servers ({len(web.dead)} dead, kind '{args.dead_kind}'), "
        f"{args.pages} pages each, {web.reachable} URLs reachable; {s:g} s per robot, {len(pairs)} runs, "
        f"agents in {setup.mode} mode with {setup.threads} load threads"
    )
    lines.append(
        f"timeouts connect/header/body {connect:g}/{header:g}/{body:g} s = the paper's "
        f"{'/'.join(f'{t:g}' for t in PAPER_TIMEOUTS)} s x {setup.scale:g}; politeness delay 0; "
        f"sequential re-checks an unanswered URL {setup.retries}x in line"
    )
    lines.append("")
    lines += [_run_line(i, p, s) for i, p in enumerate(pairs, 1)]
    per_a = [bucket_counts(p.agents.times, s, width) for p in pairs]
    per_q = [bucket_counts(p.sequential.times, s, width) for p in pairs]
    med_a = [_median_int(list(col)) for col in zip(*per_a, strict=True)]
    med_q = [_median_int(list(col)) for col in zip(*per_q, strict=True)]
    cum_a, cum_q = cumulative(med_a), cumulative(med_q)
    lines += ["", f"URLs processed per {width:g} s (median of {len(pairs)} runs)", ""]
    lines.append(f"{'until':>7} {'agents':>8} {'seq':>6} {'agents cum':>11} {'seq cum':>8} {'ratio':>7}")
    for k, (ba, bq, ca, cq) in enumerate(zip(med_a, med_q, cum_a, cum_q, strict=True), 1):
        lines.append(f"{min(k * width, s):>6g}s {ba:>8g} {bq:>6g} {ca:>11g} {cq:>8g} {_ratio(ca, cq):>6.2f}x")
    lines += ["", f"agents     {sparkline(med_a)}  peak {max(med_a):g}/bucket"]
    lines.append(f"sequential {sparkline(med_q)}  peak {max(med_q):g}/bucket")

    # The paper's table 4.2: cumulative counts at six equal checkpoints, and the mean of their ratios.
    checkpoints = [s * k / 6 for k in range(1, 7)]
    at_a = [statistics.median(len(p.agents.within(c)) for p in pairs) for c in checkpoints]
    at_q = [statistics.median(len(p.sequential.within(c)) for p in pairs) for c in checkpoints]
    ratios = [_ratio(x, y) for x, y in zip(at_a, at_q, strict=True)]
    paper = [_ratio(x, y) for x, y in zip(PAPER_HOURLY["agents"], PAPER_HOURLY["sequential"], strict=True)]
    lines += ["", "like the paper's table 4.2 (six equal checkpoints; the paper's are hours)", ""]
    lines.append("checkpoint      " + " ".join(f"{c:>7g}s" for c in checkpoints))
    lines.append("agents          " + " ".join(f"{x:>8g}" for x in at_a))
    lines.append("sequential      " + " ".join(f"{x:>8g}" for x in at_q))
    lines.append("ratio           " + " ".join(f"{r:>7.2f}x" for r in ratios))
    lines.append("paper ratio     " + " ".join(f"{r:>7.2f}x" for r in paper))

    finals = [_ratio(len(p.agents.within(s)), len(p.sequential.within(s))) for p in pairs]
    lines += [
        "",
        f"at equal wall time ({s:g} s): agents {statistics.median(len(p.agents.within(s)) for p in pairs):g} URLs, "
        f"sequential {statistics.median(len(p.sequential.within(s)) for p in pairs):g} URLs; "
        f"ratio {statistics.median(finals):.2f}x (median of runs: {', '.join(f'{r:.2f}' for r in finals)})",
        f"mean of the six checkpoint ratios {statistics.fmean(ratios):.2f}x vs the paper's {PAPER_RATIO}x "
        f"(the paper's 2.35 is this mean; its 6-h totals give {_ratio(151_797, 96_210):.2f}x)",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.agents_vs_sequential", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=2, help="runs of each robot; figures are medians")
    p.add_argument("--seconds", type=float, default=60.0, help="wall time per robot and run")
    p.add_argument("--servers", type=int, default=20, help="servers in the test web")
    p.add_argument("--dead-share", type=float, default=0.2, help="share of them that never answer")
    p.add_argument("--dead-kind", choices=("connect", "accept"), default="connect", help="how a dead server is silent")
    p.add_argument("--pages", type=int, default=600, help="pages per server (enough that nobody finishes)")
    p.add_argument("--scale", type=float, default=0.1, help="timeouts = the paper's 15/10/20 s x scale")
    p.add_argument("--bucket", type=float, default=5.0, help="seconds per row of the throughput table")
    p.add_argument("--threads", type=int, default=4, help="load threads of our agents (CRAWL_EMBEDDED_THREADS)")
    p.add_argument("--retries", type=int, default=2, help="in-line re-checks by the sequential robot")
    p.add_argument("--mode", choices=("embedded", "cluster"), default="embedded", help="how our agents run")
    p.add_argument("--seed", type=int, default=1, help="testweb seed")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 0 <= args.dead_share < 1 or args.runs < 1 or args.seconds <= 0:
        raise SystemExit("need 0 <= --dead-share < 1, --runs >= 1, --seconds > 0")
    n_dead = round(args.servers * args.dead_share)
    spec = SiteSpec(
        n_servers=args.servers,
        pages_per_server=args.pages,
        seed=args.seed,
        first_octet=FIRST_OCTET,
        silent_server=False,  # dead servers come from --dead-share instead
        slow_server=False,
    )
    run_agents = run_agents_cluster if args.mode == "cluster" else run_agents_embedded
    pairs: list[RunPair] = []
    with tempfile.TemporaryDirectory(prefix="bench-avs-") as tmp:
        setup = Setup(args.seconds, args.scale, args.threads, args.retries, args.mode, Path(tmp))
        reachable: BenchWeb | None = None
        for run in range(1, args.runs + 1):
            # A fresh web for each robot: access logs and keep-alive connections are not shared.
            with bench_web(spec, n_dead, args.dead_kind) as web:
                print(
                    f"run {run}/{args.runs}: agents ({args.mode}) for {args.seconds:g} s …", file=sys.stderr, flush=True
                )
                agents = run_agents(setup, web, run)
            with bench_web(spec, n_dead, args.dead_kind) as web:
                print(f"run {run}/{args.runs}: sequential for {args.seconds:g} s …", file=sys.stderr, flush=True)
                sequential = run_sequential(setup, web, run)
                reachable = web
            pairs.append(RunPair(agents, sequential))
            print(f"  {_run_line(run, pairs[-1], setup.seconds)}", file=sys.stderr, flush=True)
        assert reachable is not None
        print(report(pairs, args, setup, reachable))
    return 0


if __name__ == "__main__":
    sys.exit(main())
