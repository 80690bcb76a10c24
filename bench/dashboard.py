"""Benchmark: the dashboard pages under load. Prints figures; asserts nothing.
Target: p95 under 300 ms per page with 20 concurrent clients.

    python -m bench.dashboard [--urls 1000000] [--checks 5000000] [--servers 500] [--links 2000000]
                              [--clients 20] [--requests 400] [--runs 2] [--page-budget 90]
                              [--workers N] [--threads N] [--refresh-every 60] [--only PAGE,...]
                              [--keep-db | --db URL [--fresh-rollups]] [--moves N] [--web-root DIR]

Creates a fresh database on the local PostgreSQL (127.0.0.1:5432, user postgres), migrates it, loads it
with set-based SQL (generate_series; no Python row loop): servers with their ServerMonitor rows, URLs in
mixed states (init / visited / noresponse1 / noresponse2 / dead, 1 % excluded), a Page per Visited URL,
Links (two per source URL, targets anywhere), StatusChecks spread evenly over the last 30 days with ids
growing with time (60 % agent=monitor), hourly rollups computed in SQL from the monitor checks (same
figures as monitoring.services.history.rollups_build, p95 by percentile_cont), a few StatusChanges, a
month of crawl samples (one a minute, for the crawl page's history chart);
ANALYZE. Then creates a superuser and starts the web app with the production start script, docker/web.sh
(gunicorn gthread; --workers / --threads override its WEB_WORKERS / WEB_THREADS), on a free loopback
port. What beat does for the dashboard runs alongside, as `manage.py dashboard_refresh` in its own
processes (the rollups every --refresh-every seconds, the dead links every fifth time), so the pages pay
for it as they would in production. The first dashboard_refresh runs twice before any page is asked for
(the second with nothing changed: what beat's runs cost from then on), and with --moves N a third time after
N URLs moved as a crawl moves them (half of N Visited URLs fail, half of N failing ones answer again, each
move recorded as a UrlEvent), all three timed. It logs in once, and for every page runs --requests requests from
--clients threads (each its own requests.Session with the session cookie), stopping early when a page's
--page-budget seconds run out; each line also shows the machine's 1-minute load average, since other
processes on the box take CPU from the run. Also one short serial pass per page (1 client) for the
service time without queueing. --fresh-rollups empties the dashboard's and the link reports' derived tables
of a reused database first, so that its first refresh is a first one. Stops gunicorn by its PID and drops
the database, also on failure;
--keep-db keeps it (and prints its URL) for later runs with --db URL, which skip the load. --web-root
serves the pages from another checkout against the same data (bench/DASHBOARD.md compares the code before
the dashboard round's work with it).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness.db import fill_defaults, fresh_database, manage
from bench.harness.proc import cpu_seconds
from testweb.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PG = os.environ.get("CRAWLADMIN_TEST_PG", "postgres://postgres@127.0.0.1:5432/postgres")
TARGET_MS = 300.0
PASSWORD = "bench-" + uuid.uuid4().hex
PARTITIONS_FOR_A_MONTH = """
from datetime import timedelta
from django.conf import settings
from django.utils import timezone
from crawlcore.db import partitions
from crawlcore.services.check_history import COLUMN, TABLE
now = timezone.now()
partitions.ensure(TABLE, column=COLUMN, start=now - timedelta(days=31), end=now + timedelta(days=1),
                  span_days=settings.CHECK_PARTITION_DAYS)
"""


# --------------------------------------------------------------------------------------------------
# Data


def _timed(label: str, cur, sql: str, params=None) -> None:
    t = time.perf_counter()
    cur.execute(sql, params)
    print(f"  {label:<28} {time.perf_counter() - t:7.1f} s", flush=True)


def load(url: str, *, servers: int, urls: int, links: int, checks: int) -> float:
    import psycopg2

    t0 = time.perf_counter()
    conn = psycopg2.connect(url)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET TimeZone = 'UTC'")
    cur.execute("SET session_replication_role = replica")  # no FK triggers during the load
    cur.execute("SET maintenance_work_mem = '512MB'")
    cur.execute("SET work_mem = '256MB'")
    for table, given in (
        ("crawladmin_server", {"id", "scheme", "host", "port", "enabled", "group", "load_profile"}),
        (
            "monitoring_servermonitor",
            {"server_id", "enabled", "status", "status_since", "last_check_at", "last_category"},
        ),
        (
            "crawladmin_url",
            {
                "id",
                "url",
                "url_hash",
                "server_id",
                "state",
                "last_status",
                "failure_kind",
                "last_checked_at",
                "exclusion_reason",
            },
        ),
        ("crawladmin_page", {"id", "url_id", "title", "size", "checksum", "fetched_at"}),
        ("crawladmin_link", {"id", "from_url_id", "to_url_id"}),
        (
            "crawladmin_statuscheck",
            {
                "id",
                "url_id",
                "server_id",
                "requested_url",
                "checked_at",
                "status_code",
                "category",
                "failure_kind",
                "latency_ms",
                "agent",
            },
        ),
        (
            "monitoring_hourlyrollup",
            {"id", "server_id", "hour", "normal", "delay", "disconnect", "error", "maintenance", "timed", "updated_at"},
        ),
        ("monitoring_statuschange", {"id", "server_id", "from_status", "to_status", "at", "reason"}),
    ):
        fill_defaults(cur, table, given)
    cur.execute("SELECT setseed(0.42)")
    _timed(
        "servers + monitors",
        cur,
        """
        INSERT INTO crawladmin_server (id, scheme, host, port, enabled, "group", load_profile)
        SELECT i, 'http', 's' || i || '.example', 80, true, 'g' || (i %% 10), p.profile
        FROM generate_series(1, %(n)s) i,
             LATERAL (SELECT jsonb_agg(round((100 + random() * 900)::numeric, 1)) AS profile
                      FROM generate_series(1, 24) h WHERE i > 0) p;
        INSERT INTO monitoring_servermonitor (server_id, enabled, status, status_since,
                                              last_check_at, last_category)
        SELECT i, true,
               (ARRAY['normal','normal','normal','normal','normal','normal','delay','disconnect','error','unknown'])
                   [1 + (i %% 10)],
               now() - interval '3 days', now() - interval '1 minute', 'normal'
        FROM generate_series(1, %(n)s) i;
    """,
        {"n": servers},
    )
    # URLs: server = 1 + id % servers; state by a random draw.
    _timed(
        "urls",
        cur,
        """
        INSERT INTO crawladmin_url (id, url, url_hash, server_id, state, last_status, failure_kind,
                                    last_checked_at, exclusion_reason)
        SELECT i, 'http://s' || (1 + i %% %(s)s) || '.example/p' || i, lpad(to_hex(i), 24, '0'), 1 + i %% %(s)s,
               st, CASE WHEN st = 'visited' THEN 200 WHEN st = 'init' THEN NULL ELSE 404 END,
               CASE WHEN st IN ('noresponse1', 'noresponse2', 'dead') THEN 'http_404' ELSE '' END,
               CASE WHEN st = 'init' THEN NULL ELSE now() - random() * interval '30 days' END,
               CASE WHEN r2 < 0.01 THEN 'robots' ELSE '' END
        FROM (SELECT i, random() AS r2,
                     CASE WHEN r < 0.15 THEN 'init' WHEN r < 0.85 THEN 'visited' WHEN r < 0.90 THEN 'noresponse1'
                          WHEN r < 0.94 THEN 'noresponse2' ELSE 'dead' END AS st
              FROM (SELECT i, random() AS r FROM generate_series(1, %(n)s) i) a) b
    """,
        {"n": urls, "s": servers},
    )
    _timed(
        "pages",
        cur,
        """
        INSERT INTO crawladmin_page (id, url_id, title, size, checksum, fetched_at)
        SELECT id, id, 'Page ' || id, 20000, lpad(to_hex(id), 40, '0'), last_checked_at
        FROM crawladmin_url WHERE state = 'visited'
    """,
    )
    # Links: two per source URL (sources 1..links/2), to distinct targets anywhere.
    _timed(
        "links",
        cur,
        """
        INSERT INTO crawladmin_link (id, from_url_id, to_url_id)
        SELECT i + 1, 1 + (i / 2) %% %(u)s,
               1 + (((i / 2)::bigint * 7919 + (i %% 2) * (1 + (i / 2) %% 1000)) %% %(u)s)
        FROM generate_series(0, %(n)s - 1) i
    """,
        {"n": links, "u": urls},
    )
    # Checks: ids grow with checked_at, evenly over 30 days; 60 % monitor checks of the server's home page.
    _timed(
        "status checks",
        cur,
        """
        INSERT INTO crawladmin_statuscheck (id, url_id, server_id, requested_url, checked_at, status_code, category,
                                            failure_kind, latency_ms, agent)
        SELECT i, CASE WHEN mon THEN NULL ELSE 1 + (i * 31) %% %(u)s END, sid,
               'http://s' || sid || '.example/', now() - interval '30 days' + (i::float8 / %(n)s) * interval '30 days',
               CASE cat WHEN 'disconnect' THEN NULL WHEN 'error' THEN 503 ELSE 200 END, cat,
               CASE cat WHEN 'disconnect' THEN 'timeout' WHEN 'error' THEN 'http_503' ELSE '' END,
               CASE cat WHEN 'delay' THEN 3000 + random() * 2000 WHEN 'disconnect' THEN 15000
                        ELSE 50 + random() * random() * 1500 END,
               CASE WHEN mon THEN 'monitor' ELSE 'active_scan' END
        FROM (SELECT i, 1 + i %% %(s)s AS sid, ((i / %(s)s) %% 5) < 3 AS mon,
                     CASE WHEN r < 0.92 THEN 'normal' WHEN r < 0.96 THEN 'delay' WHEN r < 0.98 THEN 'disconnect'
                          ELSE 'error' END AS cat
              FROM (SELECT i, random() AS r FROM generate_series(1, %(n)s) i) a) b
    """,
        {"n": checks, "u": urls, "s": servers},
    )
    _timed(
        "hourly rollups (SQL)",
        cur,
        """
        INSERT INTO monitoring_hourlyrollup (server_id, hour, normal, delay, disconnect, error, maintenance, timed,
            latency_min_ms, latency_mean_ms, latency_p95_ms, latency_max_ms, updated_at)
        SELECT server_id, date_trunc('hour', checked_at),
               count(*) FILTER (WHERE category = 'normal'), count(*) FILTER (WHERE category = 'delay'),
               count(*) FILTER (WHERE category = 'disconnect'), count(*) FILTER (WHERE category = 'error'), 0,
               count(*) FILTER (WHERE status_code IS NOT NULL),
               min(latency_ms) FILTER (WHERE status_code IS NOT NULL),
               avg(latency_ms) FILTER (WHERE status_code IS NOT NULL),
               percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE status_code IS NOT NULL),
               max(latency_ms) FILTER (WHERE status_code IS NOT NULL), now()
        FROM crawladmin_statuscheck WHERE agent = 'monitor' GROUP BY 1, 2
    """,
    )
    _timed(
        "status changes",
        cur,
        """
        INSERT INTO monitoring_statuschange (server_id, from_status, to_status, at, reason)
        SELECT s, CASE WHEN k %% 2 = 0 THEN 'normal' ELSE 'error' END,
               CASE WHEN k %% 2 = 0 THEN 'error' ELSE 'normal' END,
               now() - (k * interval '3 days') - s * interval '1 minute', 'bench'
        FROM generate_series(1, %(s)s) s, generate_series(1, 10) k
    """,
        {"s": servers},
    )
    _timed(
        "crawl samples (a month, one a minute)",
        cur,
        """
        INSERT INTO dashboard_crawlsample (at, states, excluded)
        SELECT now() - m * interval '1 minute',
               jsonb_build_object('init', %(u)s::bigint * m / 43200, 'visited', %(u)s::bigint * (43200 - m) / 43200,
                                  'noresponse1', m %% 50, 'noresponse2', m %% 20, 'dead', m %% 300),
               m %% 1000
        FROM generate_series(1, 43200) m
    """,
        {"u": urls},
    )
    for table in (
        "crawladmin_server",
        "dashboard_crawlsample",
        "crawladmin_url",
        "crawladmin_page",
        "crawladmin_link",
        "crawladmin_statuscheck",
        "monitoring_hourlyrollup",
        "monitoring_statuschange",
    ):
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    _timed("vacuum analyze", cur, "VACUUM ANALYZE")
    cur.close()
    conn.close()
    return time.perf_counter() - t0


# --------------------------------------------------------------------------------------------------
# The web app and its clients


def _login(base: str, user: str) -> dict:
    import requests

    s = requests.Session()
    page = s.get(f"{base}/dashboard/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    resp = s.post(
        f"{base}/dashboard/login/",
        data={"username": user, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/dashboard/login/"},
        allow_redirects=False,
        timeout=30,
    )
    if resp.status_code != 302 or "sessionid" not in s.cookies:
        raise RuntimeError(f"login failed: {resp.status_code} {resp.text[:300]}")
    return s.cookies.get_dict()


def _pages(servers: int, dead_site: int) -> list[tuple[str, object]]:
    """(name, path or fn(i) -> path); the per-server pages rotate over servers so no one row stays hot."""

    def srv(rng):
        return lambda i: f"/dashboard/servers/{1 + (i * 37) % servers}/?range={rng}"

    return [
        ("grid", "/dashboard/"),
        ("grid.json", "/dashboard/grid.json"),
        ("server 1h", srv("1h")),
        ("server 24h", srv("24h")),
        ("server 7d", srv("7d")),
        ("server 30d", srv("30d")),
        ("crawl", "/dashboard/crawl/"),
        ("dead-links", "/dashboard/dead-links/"),
        ("dead-links site", f"/dashboard/dead-links/{dead_site}/"),
        ("dead-links site*", lambda i: f"/dashboard/dead-links/{1 + (i * 37) % servers}/"),
        ("heatmap", "/dashboard/heatmap/"),
        ("/api/summary", "/api/summary"),
        ("/metrics", "/metrics"),
    ]


WEB_APP_NAME = "bench-dashboard-web"  # PGAPPNAME of the web app's connections: its PostgreSQL backends


def _cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far (0 when it is gone), in milliseconds."""
    return 1000.0 * cpu_seconds(pid)


class CpuMeter:
    """CPU time the web app's processes (gunicorn's workers) and their PostgreSQL backends spend, read from
    /proc: per request, a cost that other load on the box does not inflate the way it inflates latency."""

    def __init__(self, url: str, gunicorn_pid: int) -> None:
        import psycopg2

        self.conn = psycopg2.connect(url)
        self.conn.autocommit = True
        self.gunicorn_pid = gunicorn_pid

    def _pids(self) -> tuple[list[int], list[int]]:
        web = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.gunicorn_pid:
                    web.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue
        with self.conn.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [WEB_APP_NAME])
            db = [row[0] for row in cur.fetchall()]
        return web, db

    def snapshot(self) -> dict[tuple[str, int], float]:
        web, db = self._pids()
        return {**{("web", p): _cpu_ms(p) for p in web}, **{("db", p): _cpu_ms(p) for p in db}}

    @staticmethod
    def spent(before: dict, after: dict) -> dict[str, float]:
        """CPU ms per kind between two snapshots; processes born in between count from zero."""
        out = {"web": 0.0, "db": 0.0}
        for key, ms in after.items():
            out[key[0]] += max(0.0, ms - before.get(key, 0.0))
        return out


def _hammer(base: str, cookies: dict, path, *, clients: int, requests_n: int, budget: float) -> dict:
    import requests

    lat: list[float] = []
    errors: list[str] = []
    counter = iter(range(requests_n))
    lock = threading.Lock()
    deadline = time.monotonic() + budget

    def worker():
        s = requests.Session()
        s.cookies.update(cookies)
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            p = path(i) if callable(path) else path
            t = time.perf_counter()
            try:
                r = s.get(base + p, timeout=120, allow_redirects=False)
                ms = (time.perf_counter() - t) * 1000
                with lock:
                    lat.append(ms)
                    if r.status_code != 200:
                        errors.append(f"{r.status_code} {p}")
            except requests.RequestException as exc:
                with lock:
                    errors.append(f"{type(exc).__name__} {p}")

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(budget + 150)
    lat.sort()
    q = (lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]) if lat else (lambda f: float("nan"))
    return {
        "n": len(lat),
        "p50": q(0.5),
        "p95": q(0.95),
        "max": lat[-1] if lat else float("nan"),
        "errors": errors[:3],
        "n_errors": len(errors),
    }


def _serial(base: str, cookies: dict, path, n: int = 10) -> float:
    import requests

    s = requests.Session()
    s.cookies.update(cookies)
    out = []
    for i in range(n):
        p = path(1000 + i) if callable(path) else path
        t = time.perf_counter()
        s.get(base + p, timeout=120, allow_redirects=False)
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


@contextmanager
def _database(args) -> Iterator[tuple[str, bool]]:
    """(database URL, whether it must be loaded): --db reuses a loaded one, --keep-db leaves the new one behind."""
    if args.db:
        yield args.db, False
        return
    if not args.keep_db:
        with fresh_database("dashboard") as url:
            yield url, True
        return
    import psycopg2

    name = f"crawladmin_bench_dashboard_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(ADMIN_PG, connect_timeout=5)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    url = ADMIN_PG.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url, True
    finally:
        print(f"kept the database: --db {url}  (drop it with: dropdb -h 127.0.0.1 -U postgres {name})")


def _busiest_dead_site(url: str, servers: int) -> tuple[int, int]:
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(
            """SELECT u.server_id, count(*) FROM crawladmin_link l
                   JOIN crawladmin_url t ON t.id = l.to_url_id JOIN crawladmin_url u ON u.id = l.from_url_id
                   WHERE t.state IN ('noresponse1','noresponse2','dead') AND t.exclusion_reason = ''
                   GROUP BY 1 ORDER BY 2 DESC LIMIT 1"""
        )
        dead_site, dead_n = cur.fetchone()
        cur.execute("SELECT count(*) FROM monitoring_hourlyrollup")
        print(f"rollups: {cur.fetchone()[0]:,}; busiest dead-link site: {dead_site} ({dead_n} links)", flush=True)
    return dead_site, dead_n


def _rollups_empty(url: str) -> None:
    """The dashboard's and the link reports' derived tables emptied: the next refresh is a first one."""
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE reports_linkbreak, reports_linkbreakrefresh, dashboard_snapshot, dashboard_serverrollup")


def _urls_move(url: str, n: int) -> None:
    """`n` URLs move as a crawl moves them: n/2 Visited ones fail (NoResponse1), n/2 failing ones answer again
    (Visited), each with its last check now and a UrlEvent, as crawlcore.services.urls writes them."""
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        for from_states, to_state, status, kind in (
            (("visited",), "noresponse1", 500, "http_status"),
            (("noresponse1", "noresponse2", "dead"), "visited", 200, ""),
        ):
            cur.execute(
                """WITH moved AS (
                       UPDATE crawladmin_url u SET state = %(to)s, last_status = %(status)s, failure_kind = %(kind)s,
                              last_checked_at = now()
                       FROM (SELECT id, state FROM crawladmin_url WHERE state = ANY(%(from)s)
                             AND exclusion_reason = '' ORDER BY random() LIMIT %(n)s) pick
                       WHERE u.id = pick.id RETURNING u.id, pick.state)
                   INSERT INTO crawladmin_urlevent (url_id, from_state, to_state, agent, at, http_status, reason)
                   SELECT id, state, %(to)s, 'active_scan', now(), %(status)s, 'bench' FROM moved""",
                {"to": to_state, "status": status, "kind": kind, "from": list(from_states), "n": n // 2},
            )


class Beat:
    """What beat does for the dashboard in production, in its own processes as a worker would, so its
    cost is part of what the pages see: `manage.py dashboard_refresh --only rollups` every `every` seconds
    (production: 60) and `--only dead_links` every 5 × `every` (production: 300). Both once at the start."""

    def __init__(self, env: dict, every: float, *, moves: Callable[[], None] | None = None) -> None:
        self.env, self.every, self.moves = env, every, moves
        self.stop = threading.Event()
        self.runs: list[float] = []  # seconds per dashboard_refresh run
        self.first: list[float] = []  # the first run, the second (nothing changed), the third (after --moves)
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _run(self, *args: str) -> float:
        t = time.perf_counter()
        manage(self.env, "dashboard_refresh", *args, timeout=900)
        self.runs.append(time.perf_counter() - t)
        return self.runs[-1]

    def _loop(self) -> None:
        first = [self._run(), self._run()]
        if self.moves is not None:
            self.moves()
            first.append(self._run())
        self.first = first
        tick = 1
        while not self.stop.wait(self.every):
            self._run(*(() if tick % 5 == 0 else ("--only", "rollups")))
            tick += 1

    def __enter__(self) -> Beat:
        if self.every > 0:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(600)


def _start_web(env: dict, port: int, args, log) -> subprocess.Popen:
    """The production start script, docker/web.sh (gunicorn with its worker and thread counts), on loopback."""
    web_env = {**env, "PYTHON": sys.executable, "WEB_BIND": "127.0.0.1", "WEB_PORT": str(port), "WEB_TIMEOUT": "180"}
    web_env["PGAPPNAME"] = WEB_APP_NAME  # libpq's: marks the web app's backends for CpuMeter
    if args.workers is not None:
        web_env["WEB_WORKERS"] = str(args.workers)
    if args.threads is not None:
        web_env["WEB_THREADS"] = str(args.threads)
    root = Path(args.web_root) if args.web_root else ROOT
    return subprocess.Popen(
        [str(root / "docker" / "web.sh")], cwd=root, env=web_env, stdout=log, stderr=subprocess.STDOUT
    )


def _web_config(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return "?"
    value = {k: argv[argv.index(k) + 1] for k in ("--workers", "--threads") if k in argv}
    return f"gunicorn --workers {value.get('--workers', '?')} --threads {value.get('--threads', '?')}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--checks", type=int, default=5_000_000)
    ap.add_argument("--servers", type=int, default=500)
    ap.add_argument("--links", type=int, default=2_000_000)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=400, help="requests per page per run")
    ap.add_argument("--runs", type=int, default=2, help="load runs per page; the median p50/p95 is printed")
    ap.add_argument("--page-budget", type=float, default=90.0, help="seconds per page per run at most")
    ap.add_argument("--workers", type=int, default=None, help="gunicorn processes (default: docker/web.sh's)")
    ap.add_argument("--threads", type=int, default=None, help="threads per process (default: docker/web.sh's)")
    ap.add_argument(
        "--refresh-every",
        type=float,
        default=60.0,
        help="seconds between dashboard_refresh runs, as beat would (0: never)",
    )
    ap.add_argument("--only", default="", help="comma-separated page names to measure (default: every page)")
    ap.add_argument("--db", default="", help="reuse this database, loaded by an earlier --keep-db run (no load)")
    ap.add_argument("--keep-db", action="store_true", help="keep the new database and print its URL")
    ap.add_argument(
        "--fresh-rollups", action="store_true", help="empty the derived tables first, for a first refresh again"
    )
    ap.add_argument("--moves", type=int, default=0, help="URLs moved before a third timed refresh")
    ap.add_argument(
        "--web-root",
        default="",
        help="serve the pages from another checkout (e.g. an older commit's `git archive`) to compare code",
    )
    args = ap.parse_args(argv)
    try:
        import psycopg2

        psycopg2.connect(ADMIN_PG, connect_timeout=5).close()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it means: no PostgreSQL here
        print(f"PostgreSQL not reachable at {ADMIN_PG}: {exc}", file=sys.stderr)
        sys.exit(2)
    gunicorn = None
    with _database(args) as (url, fresh):
        try:
            env = {
                **os.environ,
                "DATABASE_URL": url,
                "DJANGO_SECRET_KEY": "bench-dashboard-" + uuid.uuid4().hex * 2,
                "DJANGO_SETTINGS_MODULE": "crawladmin.settings",
                "DJANGO_SECURE": "false",
                "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
                "CELERY_BROKER_URL": "memory://",
            }
            t = time.perf_counter()
            manage(env, "migrate", "--noinput")
            print(f"migrate: {time.perf_counter() - t:.1f} s", flush=True)
            load_s = float("nan")
            if fresh:
                print(
                    f"loading {args.servers} servers, {args.urls:,} URLs, {args.links:,} links, "
                    f"{args.checks:,} checks ...",
                    flush=True,
                )
                # The month of checks goes into daily partitions (PostgreSQL, crawlcore.db.partitions), as beat
                # would have made them over the month, not all into the DEFAULT partition.
                t = time.perf_counter()
                manage(env, "shell", "-c", PARTITIONS_FOR_A_MONTH)
                print(f"check partitions for 31 days: {time.perf_counter() - t:.1f} s", flush=True)
                load_s = load(url, servers=args.servers, urls=args.urls, links=args.links, checks=args.checks)
                print(f"load time: {load_s:.1f} s", flush=True)
            dead_site, _ = _busiest_dead_site(url, args.servers)
            user = "bench-" + uuid.uuid4().hex[:8]
            manage(
                {**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
                "createsuperuser",
                "--noinput",
                "--username",
                user,
                "--email",
                "bench@example.invalid",
            )
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            log = tempfile.NamedTemporaryFile("w", prefix="bench-dashboard-gunicorn-", suffix=".log", delete=False)  # noqa: SIM115
            if args.fresh_rollups:
                _rollups_empty(url)
            moves = (lambda: _urls_move(url, args.moves)) if args.moves else None
            with Beat(env, args.refresh_every, moves=moves) as beat:
                if args.refresh_every > 0:  # the first refreshes, before any page is asked for
                    while not beat.first and beat.thread.is_alive():
                        time.sleep(0.2)
                    names = ("first", "second (nothing changed)", f"after {args.moves:,} URL moves")
                    runs = zip(names[: len(beat.first)], beat.first, strict=True)
                    print(
                        "dashboard_refresh: " + ", ".join(f"{n} {s:.1f} s" for n, s in runs),
                        f"(load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
                gunicorn = _start_web(env, port, args, log)
                import requests

                for _ in range(150):  # 30 s at most
                    try:
                        requests.get(f"{base}/healthz", timeout=2)
                        break
                    except requests.RequestException:
                        if gunicorn.poll() is not None:
                            raise RuntimeError("gunicorn exited; see " + log.name) from None
                        time.sleep(0.2)
                web = _web_config(gunicorn.pid)
                cookies = _login(base, user)
                pages = _pages(args.servers, dead_site)
                if args.only:
                    wanted = {n.strip() for n in args.only.split(",")}
                    pages = [(n, p) for n, p in pages if n in wanted]
                serial = {}
                for name, path in pages:  # warms the workers' caches and connections too
                    serial[name] = _serial(base, cookies, path)
                results: dict[str, list[dict]] = {name: [] for name, _ in pages}
                meter = CpuMeter(url, gunicorn.pid)
                for run in range(args.runs):
                    for name, path in pages:
                        before = meter.snapshot()
                        r = _hammer(
                            base,
                            cookies,
                            path,
                            clients=args.clients,
                            requests_n=args.requests,
                            budget=args.page_budget,
                        )
                        cpu = CpuMeter.spent(before, meter.snapshot())
                        r["web_cpu"], r["db_cpu"] = (cpu[k] / max(1, r["n"]) for k in ("web", "db"))
                        results[name].append(r)
                        print(
                            f"  run {run + 1} {name:<17} n={r['n']:4d} p50={r['p50']:7.0f} p95={r['p95']:7.0f} "
                            f"max={r['max']:7.0f} ms errors={r['n_errors']} {r['errors'][:1]} "
                            f"cpu/req web={r['web_cpu']:.1f} db={r['db_cpu']:.1f} ms load={os.getloadavg()[0]:.1f}",
                            flush=True,
                        )
            print()
            refreshes = (
                f"{len(beat.runs)} dashboard_refresh runs, median {statistics.median(beat.runs):.1f} s"
                if (beat.runs)
                else "no dashboard_refresh"
            )
            print(
                f"load time {load_s:.1f} s; {args.clients} clients, {web} (docker/web.sh), "
                f"median of {args.runs} run(s); serial = 1 client, median of 10; {refreshes}"
            )
            print("cpu web / db: CPU ms per request of gunicorn's workers / of their PostgreSQL backends")
            header = f"{'page':<18}{'n':>6}{'serial':>9}{'p50':>9}{'p95':>9}{'max':>9}{'cpu web':>9}{'cpu db':>8}"
            print(f"{header}  p95<300ms")
            for name, _ in pages:
                rs = results[name]
                p50 = statistics.median(r["p50"] for r in rs)
                p95 = statistics.median(r["p95"] for r in rs)
                mx = max(r["max"] for r in rs)
                n = sum(r["n"] for r in rs)
                web_cpu = statistics.median(r["web_cpu"] for r in rs)
                db_cpu = statistics.median(r["db_cpu"] for r in rs)
                errors = sum(r["n_errors"] for r in rs)
                ok = "yes" if p95 < TARGET_MS and not errors else "NO"
                note = f"  ({errors} errors)" if errors else ""
                print(
                    f"{name:<18}{n:>6}{serial[name]:>9.0f}{p50:>9.0f}{p95:>9.0f}{mx:>9.0f}{web_cpu:>9.1f}{db_cpu:>8.1f}"
                    f"  {ok}{note}"
                )
        finally:
            if gunicorn is not None:
                gunicorn.send_signal(signal.SIGTERM)
                try:
                    gunicorn.wait(30)
                except subprocess.TimeoutExpired:
                    gunicorn.kill()
                    gunicorn.wait(10)
                log.close()
                if sys.exc_info()[0] is None:  # keep the server's log only when something failed
                    os.unlink(log.name)


if __name__ == "__main__":
    main()
