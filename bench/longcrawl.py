"""Benchmark: one long crawl through the whole stack on a generated web that does not fit on disk, and how
the crawl holds up from its first tenth to its last. Prints figures; exits 1 when the crawl did not find
exactly the web.

    python -m bench.longcrawl --pages N [--servers S] [--slots 2] [--workers SPEC] [--dir DIR] [--json PATH]

1. The web (testweb.njsweb): about N pages on S servers (20, or up to 100 for large N), computed by our own
   nginx's JavaScript module from their URL: 4–15 KB, four languages, 30 links each, 3 % of pages linking
   a 404, 2 % a redirect, one in 50 a robots-disallowed page. wrk measures it first, alone, on one worker.
2. Ours, as bench.throughput runs it: a private PostgreSQL cluster (fsync on, pg_stat_statements), a
   private redis-server, the celery workers of --workers and one celery beat, then `manage.py crawl` of
   the home pages. Loopback allowed, no politeness delay, --slots requests in flight per server.
3. While it runs, from nginx's access log (read as it grows, nothing asked of the crawl): at each tenth
   of the URLs to fetch, a line with that tenth's pages/s, CPU ms a page (every process of ours:
   workers, beat, the crawl command, redis, all of the private PostgreSQL), each worker's peak RSS in the
   tenth, the database's size, its dead tuples and autovacuum/autoanalyze runs so far, and beat's jobs
   (crawladmin_beatjobrun: the slowest run against its period, runs over their period).
4. At the end: last tenth's pages/s ÷ first tenth's (goal ≥ 0.80), RSS flatness (goal: each worker's
   peak in the last tenth within 20 % of the first's), the largest tables, the disk the run used and
   what 1,000,000 pages would take at the measured rate and size; then the checks: every page, 404 and
   redirect requested once, robots.txt and sitemap.xml once per server, /private/ never; every page and
   redirect Visited, every 404 in NoResponse1 (re-checked a day later), robots-disallowed ones excluded,
   no URL in any other state (none lost, leased or failed), one Page a page, one Link a link, one
   StatusCheck a request. Re-checks wait a day (--env CRAWL_REVISIT_AFTER, CRAWL_NR1_BACKOFF): the crawl
   measured is the first one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, closing
from dataclasses import asdict
from pathlib import Path

from bench.harness.proc import child_named, load_average, tree_cpu, tree_rss
from bench.harness.services import wait_for_workers
from bench.throughput import (
    MB,
    PRIVATE_PG,
    BenchError,
    _code_state,
    _count_ours,
    _ours_env,
    _stop_on_sigterm,
    default_workers,
    parse_workers,
)
from testweb.njsweb import NjsWeb, NjsWebSpec, njs_available, port_is_free

ROOT = Path(__file__).resolve().parent.parent
AGENT = "crawladmin"
GOAL_RATIO = 0.80
GOAL_RSS = 1.20
SCALE_PAGES = 1_000_000
# The crawl measured is the first one: no Visited page re-checked and no 404 tried again while it runs
# (both an hour by default, less than a million pages take), so each URL is requested once. --env overrides.
FIRST_CRAWL_ONLY = ("CRAWL_REVISIT_AFTER=86400", "CRAWL_NR1_BACKOFF=86400")


# --------------------------------------------------------------------------------------------------
# What the crawl asked nginx


class AccessLogTail:
    """nginx's access log read as it grows: the crawler's requests by kind, and requests of a URL already
    asked for. A URL is kept as a 64-bit hash of its address and path (a million URLs in ~60 MB)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.rest = path, 0, b""
        self.seen: set[int] = set()
        self.kinds: Counter = Counter()
        self.repeated = 0

    def poll(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(64 * MB)
        self.offset += len(data)
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            head, _, agent = line.decode(errors="replace").partition(' "')
            if AGENT not in agent:
                continue
            addr, _method, path, status, _size = head.split(" ", 4)
            key = hash((addr, path))
            if key in self.seen:
                self.repeated += 1
            else:
                self.seen.add(key)
            self.kinds[_kind(path, int(status))] += 1

    @property
    def fetched(self) -> int:
        """URLs of the web fetched: pages, 404s and redirects (robots.txt, sitemaps and /private/ apart)."""
        return self.kinds["page"] + self.kinds["gone"] + self.kinds["moved"]

    @property
    def requests(self) -> int:
        return sum(self.kinds.values())


def _kind(path: str, status: int) -> str:
    if path == "/robots.txt":
        return "robots"
    if path == "/sitemap.xml":
        return "sitemap"
    if path.startswith("/private/"):
        return "private"
    return {200: "page", 301: "moved", 404: "gone"}.get(status, f"other {status}")


# --------------------------------------------------------------------------------------------------
# Readings


def db_reading(db: str) -> dict:
    """The database's size, dead and live tuples, autovacuum and autoanalyze runs, and beat's jobs."""
    import psycopg2

    with closing(psycopg2.connect(db)) as con:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute(
                "SELECT pg_database_size(current_database()), coalesce(sum(n_live_tup), 0),"
                " coalesce(sum(n_dead_tup), 0), coalesce(sum(autovacuum_count), 0),"
                " coalesce(sum(autoanalyze_count), 0) FROM pg_stat_user_tables"
            )
            size, live, dead, vacuums, analyzes = (int(x) for x in cur.fetchone())
            cur.execute(
                "SELECT name, period_seconds, last_seconds, max_seconds, runs, over_period"
                " FROM crawladmin_beatjobrun ORDER BY name"
            )
            beat = {
                name: {"period_s": p, "last_s": last, "max_s": mx, "runs": runs, "over_period": over}
                for name, p, last, mx, runs, over in cur.fetchall()
            }
    return {"db_bytes": size, "live_tuples": live, "dead_tuples": dead, "autovacuums": vacuums,
            "autoanalyzes": analyzes, "beat": beat}  # fmt: skip


def largest_tables(db: str, n: int = 8) -> list[tuple[str, int, int]]:
    """(table, total bytes with indexes and TOAST, rows estimate), largest first."""
    import psycopg2

    with closing(psycopg2.connect(db)) as con, con.cursor() as cur:
        cur.execute(
            "SELECT relname, pg_total_relation_size(relid), n_live_tup FROM pg_stat_user_tables"
            " ORDER BY 2 DESC LIMIT %s",
            [n],
        )
        return [(name.removeprefix("crawladmin_"), int(size), int(rows)) for name, size, rows in cur.fetchall()]


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, timeout=300).stdout
    return int(out.split()[0]) if out else 0


class Monitor:
    """Readings at each tenth of the crawl, and each worker's peak RSS within each tenth.

    The crawl's progress is its pages extracted (fetched, parsed, their links in the database), not its
    fetches: the fetches run ahead of extraction, and counting them would leave extraction's backlog to
    the last tenth. Extracted = the pages in nginx's access log less the Page rows not yet extracted (a
    count on the partial index the extract dispatcher uses); pages fetched but not yet stored (a load
    batch in flight) count as extracted for that moment, a few hundred at most."""

    def __init__(self, *, pages: int, db: str, roots: dict[str, int], workers: dict[str, int], tail):
        import psycopg2

        self.pages, self.roots, self.workers, self.tail = pages, roots, workers, tail
        self.db = db
        self.con = psycopg2.connect(db)
        self.con.autocommit = True
        self.backlog = 0
        self.cpu_last: dict[str, float] = {}
        self.peak: dict[str, int] = dict.fromkeys(workers, 0)
        self.tenths: list[dict] = []
        self.t0 = time.monotonic()
        self.prev = {"t": 0.0, "fetched": 0, "extracted": 0, "cpu": self._cpu()}

    def close(self) -> None:
        self.con.close()

    def _cpu(self) -> dict[str, float]:
        # A process that ended keeps the last figure read (the crawl command, at the very end).
        for name, pid in self.roots.items():
            self.cpu_last[name] = max(self.cpu_last.get(name, 0.0), tree_cpu(pid))
        return dict(self.cpu_last)

    def sample_rss(self) -> None:
        for name, pid in self.workers.items():
            self.peak[name] = max(self.peak[name], tree_rss(pid))

    def extracted(self) -> int:
        with self.con.cursor() as cur:
            cur.execute("SELECT count(*) FROM crawladmin_page WHERE extracted_at IS NULL")
            self.backlog = cur.fetchone()[0]
        return max(0, self.tail.kinds["page"] - self.backlog)

    def due(self, extracted: int) -> bool:
        return len(self.tenths) < 10 and extracted >= self.pages * (len(self.tenths) + 1) / 10

    def take(self, extracted: int) -> dict:
        now, fetched, cpu = time.monotonic() - self.t0, self.tail.fetched, self._cpu()
        pages, seconds = extracted - self.prev["extracted"], now - self.prev["t"]
        spent = {n: cpu[n] - self.prev["cpu"].get(n, 0.0) for n in cpu}
        row = {
            "tenth": len(self.tenths) + 1,
            "extracted": extracted,
            "fetched": fetched,
            "backlog": self.backlog,
            "t_s": round(now, 1),
            "seconds": round(seconds, 1),
            "pages_per_s": pages / seconds if seconds else 0.0,
            "fetched_per_s": (fetched - self.prev["fetched"]) / seconds if seconds else 0.0,
            "cpu_ms_per_page": 1000 * sum(spent.values()) / pages if pages else None,
            "cpu_ms_per_page_by_process": {n: round(1000 * s / pages, 2) for n, s in spent.items()} if pages else {},
            "peak_rss_mb": {n: round(v / MB) for n, v in self.peak.items()},
            "load_average": os.getloadavg()[0],
            **db_reading(self.db),
        }
        self.tenths.append(row)
        self.prev = {"t": now, "fetched": fetched, "extracted": extracted, "cpu": cpu}
        self.peak = dict.fromkeys(self.workers, 0)
        print(tenth_line(row), flush=True)
        return row


def tenth_line(r: dict) -> str:
    beat = r["beat"]
    worst = max(beat.items(), key=lambda kv: kv[1]["max_s"] / kv[1]["period_s"], default=None)
    beat_text = (
        f"beat worst {worst[1]['max_s']:.2f}/{worst[1]['period_s']} s ({worst[0].removeprefix('crawladmin: ')}), "
        f"over period {sum(b['over_period'] for b in beat.values())}"
        if worst
        else "beat: no run recorded"
    )
    cpu = "—" if r["cpu_ms_per_page"] is None else f"{r['cpu_ms_per_page']:.2f}"
    split = r["cpu_ms_per_page_by_process"]
    main = ("postgres", *(n for n in split if n.startswith("w")))
    return (
        f"tenth {r['tenth']:>2}/10: {r['extracted']:>9,} pages at {r['t_s']:>7.1f} s: {r['pages_per_s']:6.1f} pages/s "
        f"(fetches {r['fetched_per_s']:.0f}/s, backlog {r['backlog']:,}), CPU {cpu} ms/page ("
        + ", ".join(f"{n} {split[n]:.2f}" for n in main if n in split)
        + "), RSS MB "
        + " ".join(f"{n} {v}" for n, v in r["peak_rss_mb"].items())
        + f"; DB {r['db_bytes'] / MB:,.0f} MB, dead tuples {r['dead_tuples']:,}, autovacuum {r['autovacuums']}"
        f" (analyze {r['autoanalyzes']}); {beat_text}; load {r['load_average']:.2f}"
    )


# --------------------------------------------------------------------------------------------------
# The web alone


WRK_SCRIPT = """\
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/p/" .. ((n * 7919) % {last} + 1))
end
"""


def measure_web(spec: NjsWebSpec, tmp: Path, seconds: float = 3.0) -> dict:
    """Pages/s of the njs web alone on one host, a different page each request, keep-alive (wrk)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return {"tool": None}
    script = tmp / "pages.lua"
    script.write_text(WRK_SCRIPT.replace("{last}", str(spec.pages - 1)))
    text = subprocess.run(
        [wrk, "-t", "1", "-c", "16", "-d", f"{seconds:g}s", "-s", str(script), spec.seeds()[0]],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    ).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    mbps = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", text)
    return {
        "tool": "wrk",
        "pages_per_s": float(rps.group(1)) if rps else None,
        "transfer": f"{mbps.group(1)} {mbps.group(2)}/s" if mbps else None,
    }


# --------------------------------------------------------------------------------------------------
# The crawl


def run(args, spec: NjsWebSpec, nginx: NjsWeb, tmp: Path) -> dict:
    from bench.harness.db import manage
    from testweb.cluster import Processes, private_postgres, redis_server

    expected = spec.expected()
    workers = parse_workers(args.workers)
    with private_postgres(tmp, conf=PRIVATE_PG) as pg, redis_server(tmp) as broker:
        db = pg.url
        env = _ours_env(args, db, broker, tmp)
        manage(env, "migrate", "--noinput")
        with Processes(env, tmp) as procs:
            names = [f"w{i}-{w.name}" for i, w in enumerate(workers)]
            pids = {
                n: procs.worker(n, w.queues, concurrency=w.concurrency, pool=w.pool).pid
                for n, w in zip(names, workers, strict=True)
            }
            beat = procs.start("beat", "beat", "-l", "WARNING", "-s", str(tmp / "beat-schedule")).pid
            wait_for_workers(broker, names)
            postmaster = _postmaster(pg.root)
            roots = {**pids, "beat": beat, "redis": child_named("redis-server"), "postgres": postmaster}
            roots = {k: p for k, p in roots.items() if p}
            tail = AccessLogTail(nginx.access_log)
            tail.offset = nginx.log_size()
            cmd = [sys.executable, "manage.py", "crawl", "--json", "--no-progress"]
            cmd += ["--max-seconds", str(args.max_seconds), *spec.seeds()]
            nginx_cpu0 = tree_cpu(nginx.pid)
            with open(tmp / "crawl.log", "w") as log:
                crawl = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                monitor = Monitor(
                    pages=expected["pages"],
                    db=db,
                    roots={**roots, "crawl command": crawl.pid},
                    workers=pids,
                    tail=tail,
                )
                try:
                    code = _watch(crawl, monitor, args.max_seconds + 300)
                    wall = time.monotonic() - monitor.t0
                    tail.poll()
                    if len(monitor.tenths) < 10:  # the crawl ended short of the web: the rest as the last tenth
                        monitor.take(monitor.extracted())
                except BaseException:
                    crawl.kill()
                    crawl.wait(30)
                    raise
                finally:
                    monitor.close()
            nginx_cpu = tree_cpu(nginx.pid) - nginx_cpu0
            logs = {n: procs.log(n) for n in [*names, "beat"]}
        text = (tmp / "crawl.log").read_text()
        if code != 0:
            raise BenchError(f"manage.py crawl exited {code}:\n{text[-3000:]}")
        summary = json.loads(text[text.index("{") :])
        found = _count_ours(db)
        tables = largest_tables(db)
        final = db_reading(db)
        disk = {"postgres_dir": du(pg.root), "run_dir": du(tmp)}
    return {
        "stopped": summary["stopped"],
        "crawl_seconds": summary["seconds"],
        "wall_s": round(wall, 1),
        "tenths": monitor.tenths,
        "cpu_s_by_process": {k: round(v, 1) for k, v in monitor.cpu_last.items()},
        "nginx_cpu_s": round(nginx_cpu, 1),
        "found": found,
        "requests": {**tail.kinds, "repeated": tail.repeated, "total": tail.requests},
        "tables": tables,
        "final": final,
        "disk_bytes": disk,
        "log_errors": {n: len(re.findall(r"Traceback|\bERROR\b", t)) for n, t in logs.items()},
    }


def _postmaster(root: Path) -> int | None:
    """The private cluster's postmaster, from the first line of its postmaster.pid."""
    for pidfile in root.rglob("postmaster.pid"):
        try:
            return int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    return None


def _watch(crawl: subprocess.Popen, monitor: Monitor, timeout: float) -> int:
    """Until the crawl command ends: the access log twice a second; the backlog when the pages fetched
    have passed the next tenth (extracted ones cannot have before), at most every 0.5 s on a small web and
    every 2 s on a million pages (counting a large backlog costs PostgreSQL tens of ms); RSS every 2 s."""
    deadline = time.monotonic() + timeout
    every = max(0.5, min(2.0, monitor.pages / 500_000))
    counted = 0.0
    tick = 0
    while True:
        code = crawl.poll()
        monitor.tail.poll()
        now = time.monotonic()
        if code is not None or (monitor.due(monitor.tail.kinds["page"]) and now - counted >= every):
            counted = now
            extracted = monitor.extracted()
            while monitor.due(extracted):
                monitor.take(extracted)
        if code is not None:
            return code
        if now > deadline:
            crawl.kill()
        if tick % 4 == 0:
            monitor.sample_rss()
        tick += 1
        time.sleep(0.5)


# --------------------------------------------------------------------------------------------------
# Checks and report


def check(r: dict, expected: dict) -> list[str]:
    f, q = r["found"], r["requests"]
    problems = []

    def want(label: str, got, exp) -> None:
        if got != exp:
            problems.append(f"{label}: {got:,} (expected {exp:,})")

    if r["stopped"] != "done":
        problems.append(f"crawl stopped: {r['stopped']} (expected done)")
    want("pages requested (200)", q.get("page", 0), expected["pages"])
    want("404s requested", q.get("gone", 0), expected["gone"])
    want("redirects requested (301)", q.get("moved", 0), expected["moved"])
    want("robots.txt requests", q.get("robots", 0), expected["robots"])
    want("sitemap requests (one per server)", q.get("sitemap", 0), expected["robots"])
    want("requests of /private/ (robots.txt disallows)", q.get("private", 0), 0)
    want("requests repeated", q["repeated"], 0)
    other = {k: v for k, v in q.items() if k.startswith("other")}
    if other:
        problems.append(f"other answers: {other}")
    # A 404 is a failed check (crawler.lifecycle): its URL waits in NoResponse1 for a re-check a day later.
    want("Visited URLs (pages and redirects)", f["visited"], expected["pages"] + expected["moved"])
    want("NoResponse1 URLs (the 404s)", f["urls"].get("noresponse1", 0), expected["gone"])
    want("URLs excluded by robots.txt", f["urls"].get("excluded: robots.txt", 0), expected["excluded"])
    rest = {k: v for k, v in f["urls"].items() if k not in ("visited", "noresponse1", "excluded: robots.txt")}
    if rest:
        problems.append(f"URLs in other states (lost, leased or failed): {rest}")
    want("Page rows", f["pages"], expected["pages"])
    want("Link rows", f["links"], expected["links"])
    want("unextracted pages", f["unextracted"], 0)
    want("leased URLs", f["leased"], 0)
    want("StatusCheck rows vs nginx requests", f["checks"], q["total"])
    errors = {n: c for n, c in r["log_errors"].items() if c}
    if errors:
        problems.append(f"errors in worker logs: {errors}")
    return problems


def verdicts(r: dict, pages: int) -> dict:
    tenths = r["tenths"]
    first, last = tenths[0], tenths[-1]
    ratio = last["pages_per_s"] / first["pages_per_s"] if first["pages_per_s"] else None
    rss = {
        n: last["peak_rss_mb"][n] / first["peak_rss_mb"][n] if first["peak_rss_mb"].get(n) else None
        for n in first["peak_rss_mb"]
    }
    at = r["crawl_seconds"] or last["t_s"]
    rate = pages / at if at else None
    db_bytes = r["final"]["db_bytes"]
    # PostgreSQL's directory beyond the database is mostly WAL, which max_wal_size bounds: it does not grow.
    fixed = max(0, r["disk_bytes"]["postgres_dir"] - db_bytes)
    over = {n: b["over_period"] for n, b in r["final"]["beat"].items() if b["over_period"]}
    return {
        "ratio_last_first": ratio,
        "ratio_ok": ratio is not None and ratio >= GOAL_RATIO,
        "rss_last_first": rss,
        "rss_ok": all(v is not None and v <= GOAL_RSS for v in rss.values()),
        "beat_over_period": over,
        "pages_per_s": rate,
        "cpu_ms_per_page": 1000 * sum(r["cpu_s_by_process"].values()) / pages,
        "db_bytes_per_page": db_bytes / pages,
        "scale_pages": SCALE_PAGES,
        "scale_db_gb": db_bytes / pages * SCALE_PAGES / 1e9,
        "scale_disk_gb": ((db_bytes + r["disk_bytes"]["run_dir"]) / pages * SCALE_PAGES + fixed) / 1e9,
        "scale_minutes": SCALE_PAGES / rate / 60 if rate else None,
        "scale_minutes_at_last_tenth": SCALE_PAGES / last["pages_per_s"] / 60 if last["pages_per_s"] else None,
    }


def report(r: dict, v: dict, problems: list[str]) -> None:
    print(
        f"\ncrawl: {r['stopped']} in {r['crawl_seconds']:.1f} s (command {r['wall_s']:.1f} s); "
        f"{v['pages_per_s']:.1f} pages/s overall, CPU {v['cpu_ms_per_page']:.2f} ms/page"
    )
    print("CPU s by process: " + ", ".join(f"{k} {v}" for k, v in r["cpu_s_by_process"].items()) +
          f"; nginx (not ours) {r['nginx_cpu_s']}")  # fmt: skip
    ok = "meets" if v["ratio_ok"] else "MISSES"
    print(f"last tenth ÷ first tenth pages/s: {v['ratio_last_first'] or 0:.2f} ({ok} the goal ≥ {GOAL_RATIO:.2f})")
    print(
        "worker peak RSS, last tenth ÷ first: "
        + ", ".join(f"{n} {x:.2f}" for n, x in v["rss_last_first"].items() if x is not None)
        + f" ({'within' if v['rss_ok'] else 'NOT within'} {GOAL_RSS:.2f})"
    )
    final = r["final"]
    print(
        f"database {final['db_bytes'] / MB:,.0f} MB ({v['db_bytes_per_page'] / 1024:.1f} KB a page), live tuples "
        f"{final['live_tuples']:,}, dead {final['dead_tuples']:,}, autovacuum runs {final['autovacuums']}, "
        f"autoanalyze {final['autoanalyzes']}; largest: "
        + ", ".join(f"{t} {b / MB:,.0f} MB" for t, b, _ in r["tables"][:6])
    )
    print(
        f"disk: PostgreSQL's directory {r['disk_bytes']['postgres_dir'] / MB:,.0f} MB (with WAL), the run's "
        f"{r['disk_bytes']['run_dir'] / MB:,.0f} MB in all (nginx's access log included)"
    )
    print("beat jobs (slowest run / period, runs, over period):")
    for name, b in sorted(final["beat"].items()):
        print(f"   {name}: {b['max_s']:.2f} / {b['period_s']} s, {b['runs']} runs, {b['over_period']} over")
    print(
        f"{v['scale_pages']:,} pages, linearly: ~{v['scale_minutes']:.0f} min at the overall rate "
        f"(~{v['scale_minutes_at_last_tenth'] or 0:.0f} at the last tenth's), database ~{v['scale_db_gb']:.1f} GB, "
        f"disk ~{v['scale_disk_gb']:.1f} GB (the database and run directory scaled, the WAL as it was)"
    )
    q = r["requests"]
    print(f"nginx: {q['total']:,} requests: " + ", ".join(f"{k} {n:,}" for k, n in sorted(q.items()) if k != "total"))
    if problems:
        print("!!! MISMATCH:")
        for p in problems:
            print(f"!!!   {p}")
    else:
        print("checks: every page, 404 and redirect once, /private/ never, no URL lost, counts as expected")


def _count(least: int):
    """An argparse type: an integer of at least `least` (a web of -5 pages is a typo, not a smaller web)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}: {value}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    _stop_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=_count(1), default=50_000, help="pages of the web (about; whole servers)")
    ap.add_argument("--servers", type=_count(1), help="default: 20 up to 10,000 pages, then one per 500 up to 100")
    ap.add_argument("--links", type=_count(1), default=30, help="links a page (before the 404/redirect/private extras)")
    ap.add_argument("--onsite", type=_count(0), default=24, help="of which to the page's own server")
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--net", default="127.0.1", help="servers are NET.1 … NET.<servers>")
    ap.add_argument("--port", type=int, default=8097)
    ap.add_argument("--slots", type=_count(1), default=2, help="requests in flight per server")
    ap.add_argument("--workers", help="QUEUES:POOL:N,… as bench.throughput (default: its default layout)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra settings")
    ap.add_argument("--max-seconds", type=float, default=4 * 3600, help="the crawl stops here (and fails)")
    ap.add_argument("--dir", type=Path, help="where the run's files go (PostgreSQL's go to the system temp dir "
                    "when running as root); default: a new temp directory")  # fmt: skip
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--no-wrk", action="store_true", help="do not measure the web alone first")
    args = ap.parse_args(argv)
    args.env = [*FIRST_CRAWL_ONLY, *args.env]
    try:
        spec = NjsWebSpec.for_pages(
            args.pages,
            servers=args.servers,
            links=args.links,
            onsite=args.onsite,
            seed=args.seed,
            net=args.net,
            port=args.port,
        )
    except ValueError as exc:  # a web that cannot be built as asked: one line, not a traceback
        ap.error(str(exc))
    args.workers = args.workers or default_workers(spec.servers, args.slots)
    parse_workers(args.workers)
    if not njs_available():
        print("nginx with its JavaScript module is not installed (Debian: nginx libnginx-mod-http-js)", file=sys.stderr)
        return 2
    if shutil.which("redis-server") is None:
        print("redis-server is not installed", file=sys.stderr)
        return 2
    if not port_is_free(spec):
        print(f"something already listens on {spec.net}.x:{spec.port}: choose another --port or --net", file=sys.stderr)
        return 2
    expected = spec.expected()
    code = _code_state()
    print(
        f"bench.longcrawl: {spec.servers} servers × {spec.pages:,} pages = {expected['pages']:,} pages, "
        f"{expected['gone']:,} 404s, {expected['moved']:,} redirects ({expected['fetched']:,} URLs to fetch); "
        f"{args.slots} slot(s) per server; --workers {args.workers}" + (f" {' '.join(args.env)}" if args.env else "")
    )
    print(f"machine: {load_average()}; code {code['commit']}" + (" (changed files)" if code["changed"] else ""))
    out: dict = {"spec": asdict(spec), "expected": expected, "args": {k: str(x) for k, x in vars(args).items()}}
    out["code"] = code
    with ExitStack() as stack:
        if args.dir:
            args.dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="bench-longcrawl-", dir=args.dir))
        stack.callback(shutil.rmtree, tmp, True)
        (tmp / "nginx").mkdir()
        nginx = stack.enter_context(NjsWeb(spec, tmp / "nginx"))
        out["web_alone"] = alone = {"tool": None} if args.no_wrk else measure_web(spec, tmp)
        if alone["tool"]:
            print(f"the web alone (one nginx worker, wrk, 16 connections): {alone['pages_per_s']:,.0f} pages/s, "
                  f"{alone['transfer']}", flush=True)  # fmt: skip
        try:
            r = run(args, spec, nginx, tmp)
        except (BenchError, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"\n!!! the crawl FAILED: {exc}")
            return 1
    problems = check(r, expected)
    v = verdicts(r, expected["pages"])
    report(r, v, problems)
    out.update(run=r, verdicts=v, problems=problems)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
        print(f"figures written to {args.json}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
