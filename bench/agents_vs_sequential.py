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
silence costs the same share of a paper-hour as in the paper. Both robots have the same worker slots:
the baseline's loader processes default to our load + active-scan + inactive-scan threads, its extractor
processes (figure 2.1) to our extract slots; both fetch with the same HTTP client (``--client``: the
libcurl engine or requests). The web is sized so that neither robot can exhaust it (``--pages`` auto: more
pages than the fetch slots could load at the answer time), and the report warns when one did anyway.
(a) ``manage.py crawl``: our agents (``--mode cluster``: PostgreSQL, Redis and celery workers for the
    load, extract, active-scan and inactive-scan queues; ``--mode embedded``: one process, threads);
(b) ``bench.baselines.sequential_multi``: ``--procs`` loader processes, each re-checking the URLs it met in
    line, and ``--extract-slots`` extractor processes;
(c) ``bench.baselines.sequential``: the single loader with in-line retries, the earlier comparison (second table).
Each run runs every robot once, in ABBA order (odd runs ours first, even runs ours last); the ratios are
paired run by run (ours against the baseline of the same run) and the medians taken over those pairs. Per
robot and run: the load average before and after, every process's CPU seconds, CPU per collected URL.
``--latency-ms`` puts a userspace delay proxy in front of the web (this machine's netem is detected and
named, not assumed). The raw output goes to bench/results/ as JSON (``--out``).

    python -m bench.agents_vs_sequential [--runs 4] [--seconds 360] [--procs N] [--mode cluster|embedded]

A benchmark prints figures; it asserts nothing. bench/AGENTS_VS_SEQUENTIAL.md says more.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.harness.latency import network_words
from bench.harness.proc import load_average, settle, tree_cpu
from bench.harness.results import add_out_option, loadavg, write_results
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
EXHAUSTED_SHARE = 0.95  # a robot that has this share of the collectable pages before 6H has run out of web
MAX_PAGES_PER_SITE = 50_000  # the auto size's cap (pages are computed on request: only URLs cost memory)
FIRST_OCTET = 60  # 127.0.0.60 ..: away from the tests' webs (100, 130, 170, 230), which may run at the same time
SPARK = "▁▂▃▄▅▆▇█"
CLIENTS = {"engine": "the libcurl engine (crawler.engine)", "threads": "requests (crawler.fetch.Fetcher)"}


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
    extract: int = 2  # extract slots: ours (a worker's concurrency), the baseline's extractor processes
    client: str = "engine"  # CRAWL_FETCH_ENGINE for ours, --engine for the baseline

    @property
    def hour(self) -> float:
        return self.seconds / 6

    @property
    def scale(self) -> float:
        """The one time scale: a paper-hour in seconds here, over 3,600."""
        return time_scale(self.seconds)

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
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of each of the robot's processes
    load: dict[str, list[float]] = field(default_factory=dict)  # load averages "before" and "after" it ran

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu.values())

    def upto(self, seconds: float, what: str = "collected") -> int:
        return sum(1 for t in getattr(self, what) if t <= seconds)


def _crawl_env(setup: Setup, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    connect, header, body = setup.timeouts
    clock = setup.clock()
    embedded = setup.threads + (setup.extract + 2 * setup.scan_threads if setup.mode == "embedded" else 0)
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
        CRAWL_FETCH_ENGINE=setup.client,
        **extra,
    )
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_child(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run one child to its end: (the finished process, the CPU seconds of it and every descendant it reaped).
    The robots run one at a time, so the difference of RUSAGE_CHILDREN is this child's alone."""
    before = _children_cpu()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, _children_cpu() - before


def _manage_crawl(env: dict[str, str], setup: Setup, seeds: list[str]) -> tuple[dict, float]:
    proc, cpu = _run_child(
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
        env,
        setup.seconds + 180,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"manage.py crawl failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), cpu


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
    summary, cpu = _manage_crawl(_crawl_env(setup, CRAWLADMIN_DATA_DIR=str(data)), setup, web.seeds())
    con = sqlite3.connect(data / "crawladmin.sqlite3")
    try:
        rows = con.execute(_EVENTS_SQL).fetchall()
        checks = con.execute(_CHECKS_SQL).fetchall()
        (start,) = con.execute(_START_SQL).fetchone()
    finally:
        con.close()
    result = _agent_result(rows, checks, start, summary, setup.seconds)
    result.cpu = {"manage.py crawl (every agent, threads)": cpu}
    return result


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
            procs.worker("extract", "extract,housekeeping", concurrency=setup.extract)
            procs.worker("active", "active_scan", concurrency=setup.scan_threads)
            procs.worker("inactive", "inactive_scan", concurrency=setup.scan_threads)
            wait_for_workers(env["CELERY_BROKER_URL"], ("load", "extract", "active", "inactive"))
            summary, crawl_cpu = _manage_crawl(env, setup, web.seeds())
            # Read while the workers live: a worker's tree counts the pool children it reaped.
            cpu = {f"worker {name}": tree_cpu(proc.pid) for name, proc in procs.procs}
        cpu["manage.py crawl (dispatch, sweeps)"] = crawl_cpu
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
    result = _agent_result(rows, checks, start, summary, setup.seconds)
    result.cpu = cpu  # PostgreSQL's backends and redis-server are not counted: a cost the baseline has not
    return result


def _bench_module(setup: Setup, module: str, args: list[str], seeds: list[str]) -> tuple[dict, float]:
    connect, header, body = setup.timeouts
    proc, cpu = _run_child(
        [sys.executable, "-m", module, "--seconds", f"{setup.seconds:g}", *args]
        + ["--connect-timeout", f"{connect:g}", "--header-timeout", f"{header:g}", "--body-timeout", f"{body:g}"]
        + seeds,
        _crawl_env(setup),
        setup.seconds + 240,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), cpu


def run_multi_sequential(setup: Setup, web: MixWeb, run: int) -> RunResult:
    clock = setup.clock()
    args = ["--procs", str(setup.procs), "--order", setup.order, "--extractors", str(setup.extract)]
    args += ["--engine", setup.client] + [f"--{k.replace('_', '-')}={v:g}" for k, v in clock.items()]
    report, total = _bench_module(setup, "bench.baselines.sequential_multi", args, web.seeds())
    cpu = dict(report.get("cpu_seconds", {}))
    # The interpreter's start and the spawn of its processes: in the total, in no process's own report.
    cpu["start-up and exits"] = max(0.0, total - sum(cpu.values()))
    return RunResult("multi-sequential", report.pop("collected"), extra=report, cpu=cpu)


def run_single_sequential(setup: Setup, web: MixWeb, run: int) -> RunResult:
    report, cpu = _bench_module(setup, "bench.baselines.sequential", ["--retries", str(setup.retries)], web.seeds())
    processed = report.pop("processed")
    return RunResult(
        "sequential",
        sorted(p["t"] for p in processed if p["outcome"] == "visited"),
        sorted(p["t"] for p in processed),
        report,
        cpu={"sequential loader (requests)": cpu},
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
    first: str = "agents"  # ABBA: "agents" ran first in this run, or "baseline" did

    def ordered(self) -> list[RunResult]:
        robots = [self.agents, self.multi, self.single]
        return robots if self.first == "agents" else robots[::-1]


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


def cpu_lines(runs: list[RunSet], seconds: float) -> list[str]:
    """Per run and robot: the order it ran in, the load average around it, each process's CPU seconds and CPU
    per collected URL (by 6H); then the medians of CPU per collected URL over the runs."""
    lines = ["CPU seconds of every process, per run (order; load average before -> after; CPU per URL collected)"]
    per_url: dict[str, list[float]] = {}
    for i, r in enumerate(runs, 1):
        for res in r.ordered():
            collected = res.upto(seconds)
            each = res.cpu_total / collected if collected else float("inf")
            per_url.setdefault(res.robot, []).append(each)
            load = res.load
            lines.append(
                f"run {i} {res.robot:<17} load {load['before'][0]:.2f} -> {load['after'][0]:.2f}"
                + (f" (waited {res.extra['settled_s']:g} s for it)" if res.extra.get("settled_s") else "")
                + "; "
                f"CPU {res.cpu_total:.1f} s for {collected} URLs = {each * 1000:.1f} ms a URL; "
                + ", ".join(f"{k} {v:.1f}" for k, v in res.cpu.items())
            )
    lines.append(
        "median CPU per URL collected: "
        + ", ".join(f"{robot} {statistics.median(v) * 1000:.1f} ms" for robot, v in per_url.items())
    )
    return lines


def exhausted(runs: list[RunSet], setup: Setup, collectable: int) -> list[str]:
    """A warning for each robot and run that had (nearly) every collectable page before the last checkpoint:
    from then on it had nothing left to collect, and the later ratios say nothing about speed."""
    out = []
    for i, r in enumerate(runs, 1):
        for res in (r.agents, r.multi, r.single):
            got = res.upto(5 * setup.hour)
            if got >= EXHAUSTED_SHARE * collectable:
                out.append(
                    f"WARNING: run {i}, {res.robot} had {got} of the {collectable} collectable pages by 5H: it "
                    "exhausted the web before the last checkpoint; use more --pages or a longer --answer-seconds"
                )
    return out


def report(runs: list[RunSet], args: argparse.Namespace, setup: Setup, spec: MixSpec, conditions: str) -> str:
    connect, header, body = setup.timeouts
    windows = ", ".join(f"{a:g}-{b:g} h" for a, b in spec.down_windows[: spec.flaky])
    lines = [
        f"seed 001, multi-agent vs multi-process sequential: {spec.sites} sites x {spec.pages + 1} pages "
        f"({spec.sites * (spec.pages + 1)} collectable), {spec.changing_share:.0%} of pages change every "
        f"{spec.change_hours:g} h, {spec.flaky} sites down for a while ({windows}), {spec.dead} dead servers; "
        f"answers take {spec.latency:g} s (pages per site {spec.pages}{' (auto)' if args.auto_pages else ''})",
        f"one time scale, the paper's x {setup.scale:.5g} (1 paper-hour = {setup.hour:g} s): timeouts "
        f"connect/header/body {connect:g}/{header:g}/{body:g} s (the paper's "
        f"{'/'.join(f'{t:g}' for t in PAPER_TIMEOUTS)} s), answers {spec.latency:g} s (an assumed "
        f"{PAPER_LOAD_SECONDS:g} s in 2002), each robot {setup.seconds:g} s = 6 paper-hours; revisit and NR1 "
        "back-off 1 h, NR2 6 h, robots.txt memo 10 min, politeness delay 0",
        f"worker slots: ours {setup.threads} load + {setup.extract} extract + {setup.scan_threads} active-scan + "
        f"{setup.scan_threads} inactive-scan ({setup.mode} mode); baseline {setup.procs} loader processes + "
        f"{setup.extract} extractor processes, re-checks and new URLs "
        f"{'in turns' if setup.order == 'interleave' else 're-checks first'}",
        f"HTTP client: {CLIENTS[setup.client]} on both sides (the single loader: requests)",
        f"network: {network_words(args.latency_ms)}; answer time set by the web; "
        f"machine {os.cpu_count()} cores; {conditions}",
        "runs in ABBA order: " + ", ".join(f"run {i} {r.first} first" for i, r in enumerate(runs, 1)),
        *exhausted(runs, setup, spec.sites * (spec.pages + 1)),
        "",
        *table_42(runs, setup),
        "",
        *cpu_lines(runs, setup.seconds),
        "",
        *_time_spent(runs),
        "",
        *table_single(runs, setup, args.bucket),
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.agents_vs_sequential", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=4, help="runs of each robot, in ABBA order; ratios paired run by run")
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
    p.add_argument(
        "--extract-slots", type=int, default=2, help="our extract slots = the baseline's extractor processes"
    )
    p.add_argument("--client", choices=tuple(CLIENTS), default="engine", help="HTTP client of both robots")
    p.add_argument("--mode", choices=("embedded", "cluster"), default="cluster", help="how our agents run")
    p.add_argument("--sites", type=int, default=10, help="live sites (the paper: 10)")
    p.add_argument("--pages", type=int, help="pages per site (default: auto, more than the fetch slots can load)")
    p.add_argument(
        "--answer-seconds", type=float, default=PAPER_LOAD_SECONDS, help="a page's answer time, in paper-seconds"
    )
    p.add_argument("--latency-ms", type=float, default=0.0, help="round trip added by a userspace delay proxy")
    p.add_argument("--dead", type=int, default=3, help="servers that never answer")
    p.add_argument("--flaky", type=int, default=2, help="sites down for a while (1-2.5 h, 3-4.5 h)")
    p.add_argument("--changing", type=float, default=0.25, help="share of pages that change every paper-hour")
    p.add_argument("--retries", type=int, default=2, help="in-line re-checks by the single loader (second table)")
    p.add_argument("--bucket", type=float, default=5.0, help="seconds per row of the second table")
    p.add_argument("--seed", type=int, default=1, help="web seed")
    p.add_argument(
        "--settle",
        type=float,
        default=1.5,
        help="before each robot, wait (at most 3 min) for the 1-minute load average to fall under this; 0: never",
    )
    add_out_option(p)
    return p


def auto_pages(args: argparse.Namespace, answer: float) -> int:
    """Pages per site that no robot can exhaust: every fetch slot loading a page per answer time for the whole
    run, 20 % over, spread over the sites (capped; the report warns if a robot got near the end anyway)."""
    slots = max(args.procs, args.threads + 2 * args.scan_threads)
    answer += args.latency_ms / 1000
    return min(MAX_PAGES_PER_SITE, max(200, math.ceil(1.2 * slots * args.seconds / answer / args.sites)))


def time_scale(seconds: float) -> float:
    """The one time scale of a run of `seconds` a robot: six paper-hours in it, so a paper-second is this."""
    return seconds / 6 / 3600


def _check(args: argparse.Namespace) -> None:
    if args.procs is None:
        args.procs = args.threads + 2 * args.scan_threads
    if args.runs < 1 or args.seconds <= 0 or args.procs < 1 or args.extract_slots < 1:
        raise SystemExit("need --runs >= 1, --seconds > 0, --procs >= 1, --extract-slots >= 1")
    if args.answer_seconds <= 0 or args.latency_ms < 0 or (args.pages is not None and args.pages < 1):
        raise SystemExit("need --answer-seconds > 0, --latency-ms >= 0, --pages >= 1")
    # The timeouts are the paper's on the run's time scale; the proxy's round trips are not scaled. A new
    # connection waits three of them and the answer before its headers: past the header timeout, every
    # seed times out and nothing is measured.
    scale = time_scale(args.seconds)
    header_timeout = PAPER_TIMEOUTS[1] * scale
    wait = 3 * args.latency_ms / 1000 + args.answer_seconds * scale
    if args.latency_ms and wait >= header_timeout:
        longer = math.floor(6 * 3600 * (3 * args.latency_ms / 1000) / (PAPER_TIMEOUTS[1] - args.answer_seconds)) + 1
        raise SystemExit(
            f"--latency-ms {args.latency_ms:g}: a new connection waits {wait * 1000:.0f} ms for its headers, past the "
            f"header timeout of {header_timeout * 1000:.0f} ms at --seconds {args.seconds:g}; use --seconds "
            f"{longer} or more, or less latency"
        )


def _run_one(robot, setup: Setup, spec: MixSpec, args: argparse.Namespace, run: int, name: str) -> RunResult:  # noqa: ANN001
    # A fresh web for each robot: its clock (changes, down windows) starts at the robot's first request.
    waited = settle(args.settle) if args.settle else 0.0  # the robot before this one has faded from the figure
    with MixWeb(spec, rtt_ms=args.latency_ms) as web:
        print(f"run {run}/{args.runs}: {name} for {args.seconds:g} s …", file=sys.stderr, flush=True)
        before, own = loadavg(), os.times()
        result = robot(setup, web, run)
        mine = os.times()
    result.load = {"before": before, "after": loadavg()}
    # The web (and the delay proxy) run in this process, for each robot alike: its CPU is listed, not charged.
    result.extra["web_cpu_seconds"] = round(mine.user + mine.system - own.user - own.system, 3)
    result.extra["settled_s"] = waited
    return result


def _figures(runs: list[RunSet], setup: Setup, spec: MixSpec, text: str) -> dict:
    checkpoints = [setup.hour * k for k in range(1, 7)]
    return {
        "collectable": spec.sites * (spec.pages + 1),
        "pages_per_site": spec.pages,
        "checkpoints_s": checkpoints,
        "runs": [
            {
                "first": r.first,
                "robots": {
                    res.robot: {
                        "collected_by_checkpoint": [res.upto(c) for c in checkpoints],
                        "processed_by_checkpoint": [res.upto(c, "processed") for c in checkpoints],
                        "load": res.load,
                        "cpu_seconds": res.cpu,
                        "cpu_per_collected_url": res.cpu_total / max(1, res.upto(setup.seconds)),
                        "extra": res.extra,
                    }
                    for res in r.ordered()
                },
            }
            for r in runs
        ],
        "report": text.splitlines(),
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _check(args)
    scale = time_scale(args.seconds)
    args.auto_pages = args.pages is None
    pages = args.pages or auto_pages(args, args.answer_seconds * scale)
    spec = MixSpec(
        sites=args.sites,
        pages=pages,
        dead=args.dead,
        flaky=args.flaky,
        changing_share=args.changing,
        hour=args.seconds / 6,
        latency=args.answer_seconds * scale,
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
    load_start = loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-avs-") as tmp:
        setup = Setup(
            args.seconds, args.threads, args.scan_threads, args.procs, args.retries, args.mode, Path(tmp),
            args.order, args.extract_slots, args.client,
        )  # fmt: skip
        loads: list[str] = []
        for run in range(1, args.runs + 1):
            loads.append(load_average())
            first = "agents" if run % 2 else "baseline"  # ABBA: run 1 ours then the baseline, run 2 the reverse, …
            order = robots if first == "agents" else robots[::-1]
            done = {name: _run_one(robot, setup, spec, args, run, name) for name, robot in order}
            runs.append(RunSet(*(done[name] for name, _ in robots), first=first))
            a, m = runs[-1].agents, runs[-1].multi
            print(
                f"  collected by 6H: agents {a.upto(setup.seconds)}, multi-process sequential {m.upto(setup.seconds)}",
                file=sys.stderr,
                flush=True,
            )
        loads.append(load_average())
        conditions = "at each run's start and at the end: " + "; ".join(loads)
        text = report(runs, args, setup, spec, conditions)
        print(text)
    write_results("agents_vs_sequential", args, _figures(runs, setup, spec, text), load_before=load_start, out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
