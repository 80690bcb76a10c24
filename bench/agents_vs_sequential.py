"""Seed 001's experiment (§IV.2.2, table 4.2): our agents against the paper's multi-process sequential robot.

The paper crawled 10 university sites for 6 h with its multi-agent robot and with a *multi-process
sequential* robot whose loader processes re-check the active and dead URLs themselves, both under the
same per-phase timeouts (connect 15 s, header 10 s, body 20 s), and counted URLs collected each hour:
151,797 vs 96,210 after 6 h; the hourly ratios 2.7, 2.5, 3.0, 2.3, 2.0, 1.6 average to the 2.35x it
reports (the totals give 1.58x).

Here, on testweb.paper001 (10 sites, pages that change, 2 sites down for a while, 3 dead servers),
each robot runs for ``--seconds``, read at six checkpoints (one paper-hour = seconds / 6). One time scale
for everything: the life-cycle's clock (revisit, NoResponse back-offs, robots.txt memo, page changes,
down windows), the timeouts and the web's answer time are all the paper's x (seconds / 6 h), so a
silence costs the same share of a paper-hour as in the paper. Both robots have the same number of
fetchers: the baseline's loader processes default to our load + active-scan + inactive-scan threads.
(a) ``manage.py crawl``: our agents (``--mode cluster``: PostgreSQL, Redis and celery workers for the
    load, extract, active-scan and inactive-scan queues; ``--mode embedded``: one process, threads);
(b) ``bench.baselines.sequential_multi``: ``--procs`` loader processes, each re-checking the URLs it met in line;
(c) ``bench.baselines.sequential``: the single loader with in-line retries, the earlier comparison (second table).
Each run runs every robot once; the ratios are paired run by run (ours against the baseline of the same
run) and the medians taken over those pairs.

    python -m bench.agents_vs_sequential [--runs 3] [--seconds 360] [--procs N] [--mode cluster|embedded]

A benchmark prints figures; it asserts nothing. bench/AGENTS_VS_SEQUENTIAL.md says more.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.harness.proc import load_average
from bench.harness.services import wait_for_workers
from testweb.paper001 import MixSpec, MixWeb

ROOT = Path(__file__).resolve().parent.parent

PAPER_TIMEOUTS = (15.0, 10.0, 20.0)  # connect, header, body (seed 001, table 4.1)
PAPER_HOURLY = {  # cumulative URLs after 1..6 h (table 4.2)
    "agents": (19_681, 60_471, 110_268, 135_310, 150_725, 151_797),
    "sequential": (7_240, 23_883, 36_223, 57_452, 74_548, 96_210),
}
PAPER_RATIOS = (2.7, 2.5, 3.0, 2.3, 2.0, 1.6)  # as the paper prints them (one decimal)
PAPER_MEAN = 2.35
PAPER_LOAD_SECONDS = 1.0  # a page's answer time on the paper's 2002 network (assumed; it gives none)
FIRST_OCTET = 60  # 127.0.0.60 ..: away from the tests' webs (100, 130, 170, 230), which may run at the same time
SPARK = "▁▂▃▄▅▆▇█"


# --------------------------------------------------------------------------------------------------
# The robots


@dataclass
class Setup:
    seconds: float
    threads: int  # our load threads
    scan_threads: int  # our active-scan and inactive-scan threads, each
    procs: int  # the multi-process sequential robot's loaders
    retries: int  # the single loader's in-line retries
    mode: str
    tmp: Path
    order: str = "interleave"

    @property
    def hour(self) -> float:
        return self.seconds / 6

    @property
    def scale(self) -> float:
        """The one time scale: a paper-hour in seconds here, over 3,600."""
        return self.hour / 3600

    @property
    def timeouts(self) -> tuple[float, float, float]:
        return tuple(round(t * self.scale, 3) for t in PAPER_TIMEOUTS)  # type: ignore[return-value]

    def clock(self) -> dict[str, float]:
        """Our defaults on the paper-hour clock: revisit and NR1 after 1 h, NR2 after 6 h, robots memo 10 min."""
        h = self.hour
        return {"revisit_after": h, "nr1_backoff": h, "nr2_backoff": 6 * h, "robots_retry": h / 6}


@dataclass
class RunResult:
    robot: str
    collected: list[float]  # seconds after the start at which each URL was first loaded with a valid answer
    processed: list[float] = field(default_factory=list)  # ... at which each URL's first load ended (any outcome)
    extra: dict = field(default_factory=dict)

    def upto(self, seconds: float, what: str = "collected") -> int:
        return sum(1 for t in getattr(self, what) if t <= seconds)


def _crawl_env(setup: Setup, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    connect, header, body = setup.timeouts
    clock = setup.clock()
    embedded = setup.threads + (2 * setup.scan_threads if setup.mode == "embedded" else 0)
    env.update(
        CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
        CRAWL_DEFAULT_DELAY="0",
        CRAWL_CONNECT_TIMEOUT=f"{connect:g}",
        CRAWL_HEADER_TIMEOUT=f"{header:g}",
        CRAWL_BODY_TIMEOUT=f"{body:g}",
        CRAWL_EMBEDDED_THREADS=str(embedded),
        CRAWL_LOAD_SLOTS=str(setup.threads),
        CRAWL_REVISIT_AFTER=f"{clock['revisit_after']:g}",
        CRAWL_NR1_BACKOFF=f"{clock['nr1_backoff']:g}",
        CRAWL_NR2_BACKOFF=f"{clock['nr2_backoff']:g}",
        CRAWL_ROBOTS_RETRY=f"{clock['robots_retry']:g}",
        CRAWL_RECRAWL_CYCLE=f"{24 * setup.hour:g}",
        CRAWL_STALENESS_PERIOD=f"{max(1.0, setup.hour / 60):g}",
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


# A URL is collected at its first load with a valid answer (the load agent's Init -> Visited, also after a
# changed page or a revived one went back to Init); processed at the end of its first load, whatever came.
_EVENTS_SQL = "SELECT url_id, at, from_state, to_state, agent FROM crawladmin_urlevent"
_START_SQL = "SELECT MIN(created_at) FROM crawladmin_url"  # the seeds, inserted as the crawl starts
# The requests our agents made, to set beside the baseline's: who asked, when, and how long a silence lasted.
_CHECKS_SQL = "SELECT agent, checked_at, status_code, latency_ms FROM crawladmin_statuscheck"


def _as_utc(value) -> datetime:
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)  # Django stores UTC in SQLite


def _agent_result(rows: list[tuple], checks: list[tuple], start, summary: dict, seconds: float) -> RunResult:
    t0 = _as_utc(start)
    requests: dict[str, int] = {}
    waited: dict[str, float] = {}
    for agent, at, status, latency_ms in checks:
        if (_as_utc(at) - t0).total_seconds() <= seconds:
            requests[agent] = requests.get(agent, 0) + 1
            if status is None:
                waited[agent] = waited.get(agent, 0.0) + (latency_ms or 0.0) / 1000
    collected: dict[int, float] = {}
    processed: dict[int, float] = {}
    scans: dict[str, int] = {}
    for url_id, at, src, dst, agent in rows:
        t = (_as_utc(at) - t0).total_seconds()
        if agent == "load" and src == "init":
            processed[url_id] = min(t, processed.get(url_id, t))
            if dst == "visited":
                collected[url_id] = min(t, collected.get(url_id, t))
        elif agent in ("active_scan", "inactive_scan") and t <= seconds:
            key = f"{agent}:{src}->{dst}"
            scans[key] = scans.get(key, 0) + 1
    return RunResult(
        "agents",
        sorted(collected.values()),
        sorted(processed.values()),
        {"summary": summary, "moves": scans, "requests": requests, "waited": waited},
    )


def run_agents_embedded(setup: Setup, web: MixWeb, run: int) -> RunResult:
    data = setup.tmp / f"agents-{run}"
    data.mkdir()
    summary = _manage_crawl(_crawl_env(setup, CRAWLADMIN_DATA_DIR=str(data)), setup, web.seeds())
    con = sqlite3.connect(data / "crawladmin.sqlite3")
    try:
        rows = con.execute(_EVENTS_SQL).fetchall()
        checks = con.execute(_CHECKS_SQL).fetchall()
        (start,) = con.execute(_START_SQL).fetchone()
    finally:
        con.close()
    return _agent_result(rows, checks, start, summary, setup.seconds)


def run_agents_cluster(setup: Setup, web: MixWeb, run: int) -> RunResult:
    """PostgreSQL + a private redis-server + one celery worker per agent (load, extract, active scan, inactive
    scan), started with the integration tests' helpers; `manage.py crawl` seeds, dispatches, sweeps and watches."""
    import psycopg2

    from testweb.cluster import Processes, manage, postgres_database, redis_server

    tmp = setup.tmp / f"cluster-{run}"
    tmp.mkdir()
    with postgres_database() as db, redis_server(tmp) as broker:
        env = _crawl_env(
            setup,
            DATABASE_URL=db,
            CELERY_BROKER_URL=broker,
            DJANGO_SECRET_KEY="bench-only-" * 5,
            CRAWLADMIN_DATA_DIR=str(tmp),
        )
        manage(env, "migrate", "--noinput")
        with Processes(env, tmp) as procs:
            procs.worker("load", "load", concurrency=setup.threads)
            procs.worker("extract", "extract,housekeeping", concurrency=2)
            procs.worker("active", "active_scan", concurrency=setup.scan_threads)
            procs.worker("inactive", "inactive_scan", concurrency=setup.scan_threads)
            wait_for_workers(env["CELERY_BROKER_URL"], ("load", "extract", "active", "inactive"))
            summary = _manage_crawl(env, setup, web.seeds())
        con = psycopg2.connect(db)
        try:
            with con.cursor() as cur:
                cur.execute(_EVENTS_SQL)
                rows = cur.fetchall()
                cur.execute(_CHECKS_SQL)
                checks = cur.fetchall()
                cur.execute(_START_SQL)
                (start,) = cur.fetchone()
        finally:
            con.close()
    return _agent_result(rows, checks, start, summary, setup.seconds)


def _bench_module(setup: Setup, module: str, args: list[str], seeds: list[str]) -> dict:
    connect, header, body = setup.timeouts
    proc = subprocess.run(
        [sys.executable, "-m", module, "--seconds", f"{setup.seconds:g}", *args]
        + ["--connect-timeout", f"{connect:g}", "--header-timeout", f"{header:g}", "--body-timeout", f"{body:g}"]
        + seeds,
        cwd=ROOT,
        env=_crawl_env(setup),
        capture_output=True,
        text=True,
        timeout=setup.seconds + 240,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def run_multi_sequential(setup: Setup, web: MixWeb, run: int) -> RunResult:
    clock = setup.clock()
    args = ["--procs", str(setup.procs), "--order", setup.order]
    args += [f"--{k.replace('_', '-')}={v:g}" for k, v in clock.items()]
    report = _bench_module(setup, "bench.baselines.sequential_multi", args, web.seeds())
    return RunResult("multi-sequential", report.pop("collected"), extra=report)


def run_single_sequential(setup: Setup, web: MixWeb, run: int) -> RunResult:
    report = _bench_module(setup, "bench.baselines.sequential", ["--retries", str(setup.retries)], web.seeds())
    processed = report.pop("processed")
    return RunResult(
        "sequential",
        sorted(p["t"] for p in processed if p["outcome"] == "visited"),
        sorted(p["t"] for p in processed),
        report,
    )


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


def cumulative(values: list[float]) -> list[float]:
    out, total = [], 0.0
    for v in values:
        total += v
        out.append(total)
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def _median(values: list[float]) -> float:
    m = statistics.median(values)
    return int(m) if float(m).is_integer() else m


@dataclass
class RunSet:
    agents: RunResult
    multi: RunResult
    single: RunResult


def _row(label: str, values: list, fmt: str) -> str:
    return f"{label:<24}" + "".join(format(v, fmt) for v in values)


def table_42(runs: list[RunSet], setup: Setup) -> list[str]:
    """The paper's table 4.2: URLs collected by each checkpoint, both robots, the ratio, run by run (each run's
    ratio pairs ours with the baseline of the same run), then the medians of those paired ratios."""
    h = setup.hour
    checkpoints = [h * k for k in range(1, 7)]
    lines = [
        f"Table 4.2, ours: URLs collected (first valid load) by each checkpoint; 1 paper-hour = {h:g} s",
        "",
        _row("", [f"{k}H ({c:g}s)" for k, c in enumerate(checkpoints, 1)], ">12"),
    ]
    means, totals = [], []
    for i, r in enumerate(runs, 1):
        agents = [r.agents.upto(c) for c in checkpoints]
        multi = [r.multi.upto(c) for c in checkpoints]
        ratios = [_ratio(a, m) for a, m in zip(agents, multi, strict=True)]
        finite = [x for x in ratios if x != float("inf")]
        means.append(statistics.fmean(finite) if finite else float("inf"))
        totals.append(_ratio(agents[-1], multi[-1]))
        lines += [
            _row(f"run {i} multi-agent (ours)", agents, ">12g"),
            _row(f"run {i} multi-process ({setup.procs}p)", multi, ">12g"),
            _row(f"run {i} ratio", [f"{x:.2f}x" for x in ratios], ">12"),
        ]
    lines += [
        "",
        "Table 4.2, the paper (10 sites, 6 h)",
        "",
        _row("", [f"{k}H" for k in range(1, 7)], ">12"),
        _row("multi-agent", PAPER_HOURLY["agents"], ">12,"),
        _row("sequential", PAPER_HOURLY["sequential"], ">12,"),
        _row("ratio (as printed)", [f"{x:.1f}x" for x in PAPER_RATIOS], ">12"),
        "",
        "mean of the per-checkpoint ratios, each run: "
        + ", ".join(f"{x:.2f}x" for x in means)
        + f"; median {statistics.median(means):.2f}x   paper {PAPER_MEAN}x (2.7, 2.5, 3.0, 2.3, 2.0, 1.6)",
        "ratio of the totals at 6H, each run:         "
        + ", ".join(f"{x:.2f}x" for x in totals)
        + f"; median {statistics.median(totals):.2f}x   paper {_ratio(151_797, 96_210):.2f}x (151,797 vs 96,210)",
    ]
    return lines


def _time_spent(runs: list[RunSet]) -> list[str]:
    lines = []
    for i, r in enumerate(runs, 1):
        m = r.multi.extra
        outcomes = m.get("outcomes", {})
        reloads = sum(v for k, v in outcomes.items() if k.endswith("+reload"))
        waited = m.get("waited", {})
        req = r.agents.extra.get("requests", {})
        ours_waited = r.agents.extra.get("waited", {})
        lines.append(
            f"run {i}: sequential loaders: {m.get('actions', {}).get('load', 0)} loads, "
            f"{m.get('actions', {}).get('active', 0)} active re-checks, {m.get('actions', {}).get('inactive', 0)} "
            f"dead-URL re-checks, {reloads} re-loads; waited on silence "
            + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(waited.items()))
        )
        lines.append(
            "       ours (own workers): requests "
            + ", ".join(f"{k} {v}" for k, v in sorted(req.items()))
            + "; waited on silence "
            + (", ".join(f"{k} {v:.1f} s" for k, v in sorted(ours_waited.items())) or "0 s")
        )
    return lines


def table_single(runs: list[RunSet], setup: Setup, width: float) -> list[str]:
    """The earlier comparison: URLs processed (first load ended, any outcome), ours vs the single loader."""
    s = setup.seconds
    per_a = [bucket_counts(r.agents.processed, s, width) for r in runs]
    per_q = [bucket_counts(r.single.processed, s, width) for r in runs]
    med_a = [_median(list(col)) for col in zip(*per_a, strict=True)]
    med_q = [_median(list(col)) for col in zip(*per_q, strict=True)]
    cum_a, cum_q = cumulative(med_a), cumulative(med_q)
    lines = [
        "Second table: ours vs one sequential loader (bench.baselines.sequential: one process, "
        f"{setup.retries} in-line retries of an unanswered URL); URLs processed per {width:g} s",
        "",
        f"{'until':>7} {'agents':>8} {'seq':>6} {'agents cum':>11} {'seq cum':>8} {'ratio':>7}",
    ]
    for k, (ba, bq, ca, cq) in enumerate(zip(med_a, med_q, cum_a, cum_q, strict=True), 1):
        lines.append(f"{min(k * width, s):>6g}s {ba:>8g} {bq:>6g} {ca:>11g} {cq:>8g} {_ratio(ca, cq):>6.2f}x")
    lines += ["", f"agents     {sparkline(med_a)}  peak {max(med_a):g}/bucket"]
    lines.append(f"sequential {sparkline(med_q)}  peak {max(med_q):g}/bucket")
    return lines


def report(runs: list[RunSet], args: argparse.Namespace, setup: Setup, spec: MixSpec, conditions: str) -> str:
    connect, header, body = setup.timeouts
    windows = ", ".join(f"{a:g}-{b:g} h" for a, b in spec.down_windows[: spec.flaky])
    lines = [
        f"seed 001, multi-agent vs multi-process sequential: {spec.sites} sites x {spec.pages + 1} pages "
        f"({spec.sites * (spec.pages + 1)} collectable), {spec.changing_share:.0%} of pages change every "
        f"{spec.change_hours:g} h, {spec.flaky} sites down for a while ({windows}), {spec.dead} dead servers; "
        f"answers take {spec.latency:g} s",
        f"one time scale, the paper's x {setup.scale:.5g} (1 paper-hour = {setup.hour:g} s): timeouts "
        f"connect/header/body {connect:g}/{header:g}/{body:g} s (the paper's "
        f"{'/'.join(f'{t:g}' for t in PAPER_TIMEOUTS)} s), answers {spec.latency:g} s (an assumed "
        f"{PAPER_LOAD_SECONDS:g} s in 2002), each robot {setup.seconds:g} s = 6 paper-hours; revisit and NR1 "
        "back-off 1 h, NR2 6 h, robots.txt memo 10 min, politeness delay 0",
        f"fetchers: ours {setup.threads} load + {setup.scan_threads} active-scan + {setup.scan_threads} "
        f"inactive-scan threads ({setup.mode} mode); baseline {setup.procs} loader processes, re-checks and "
        f"new URLs {'in turns' if setup.order == 'interleave' else 're-checks first'}",
        f"network: loopback (no netem: this machine's kernel has no sch_netem), answer time set by the web; "
        f"machine {os.cpu_count()} cores; {conditions}",
        "",
        *table_42(runs, setup),
        "",
        *_time_spent(runs),
        "",
        *table_single(runs, setup, args.bucket),
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.agents_vs_sequential", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="runs of each robot; ratios paired run by run, then medians")
    p.add_argument("--seconds", type=float, default=360.0, help="wall time per robot and run (6 paper-hours)")
    p.add_argument("--procs", type=int, help="loader processes of the baseline (default: as many as our fetch threads)")
    p.add_argument(
        "--order",
        choices=("interleave", "recheck-first"),
        default="interleave",
        help="the baseline's loader: a due re-check and a new URL in turns, or re-checks first",
    )
    p.add_argument("--threads", type=int, default=4, help="our load threads")
    p.add_argument("--scan-threads", type=int, default=2, help="our active-scan and inactive-scan threads, each")
    p.add_argument("--mode", choices=("embedded", "cluster"), default="cluster", help="how our agents run")
    p.add_argument("--sites", type=int, default=10, help="live sites (the paper: 10)")
    p.add_argument("--pages", type=int, default=200, help="pages per site")
    p.add_argument("--dead", type=int, default=3, help="servers that never answer")
    p.add_argument("--flaky", type=int, default=2, help="sites down for a while (1-2.5 h, 3-4.5 h)")
    p.add_argument("--changing", type=float, default=0.25, help="share of pages that change every paper-hour")
    p.add_argument("--retries", type=int, default=2, help="in-line re-checks by the single loader (second table)")
    p.add_argument("--bucket", type=float, default=5.0, help="seconds per row of the second table")
    p.add_argument("--seed", type=int, default=1, help="web seed")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.procs is None:
        args.procs = args.threads + 2 * args.scan_threads
    if args.runs < 1 or args.seconds <= 0 or args.procs < 1:
        raise SystemExit("need --runs >= 1, --seconds > 0, --procs >= 1")
    scale = args.seconds / 6 / 3600
    spec = MixSpec(
        sites=args.sites,
        pages=args.pages,
        dead=args.dead,
        flaky=args.flaky,
        changing_share=args.changing,
        hour=args.seconds / 6,
        latency=PAPER_LOAD_SECONDS * scale,
        first_octet=FIRST_OCTET,
        seed=args.seed,
    )
    run_agents = run_agents_cluster if args.mode == "cluster" else run_agents_embedded
    robots = (
        ("agents", run_agents),
        ("multi-process sequential", run_multi_sequential),
        ("single loader", run_single_sequential),
    )
    runs: list[RunSet] = []
    with tempfile.TemporaryDirectory(prefix="bench-avs-") as tmp:
        setup = Setup(
            args.seconds, args.threads, args.scan_threads, args.procs, args.retries, args.mode, Path(tmp), args.order
        )
        loads: list[str] = []
        for run in range(1, args.runs + 1):
            loads.append(load_average())
            results = []
            for name, robot in robots:
                # A fresh web for each robot: its clock (changes, down windows) starts at the robot's first request.
                with MixWeb(spec) as web:
                    print(f"run {run}/{args.runs}: {name} for {args.seconds:g} s …", file=sys.stderr, flush=True)
                    results.append(robot(setup, web, run))
            runs.append(RunSet(*results))
            a, m = runs[-1].agents, runs[-1].multi
            print(
                f"  collected by 6H: agents {a.upto(setup.seconds)}, multi-process sequential {m.upto(setup.seconds)}",
                file=sys.stderr,
                flush=True,
            )
        loads.append(load_average())
        conditions = "at each run's start and at the end: " + "; ".join(loads)
        print(report(runs, args, setup, spec, conditions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
