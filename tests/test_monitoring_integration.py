"""Monitoring on the real stack: concurrent check writers and claimers on PostgreSQL, and the benchmark
path (Redis, celery worker processes, the local test web) at a small size."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import pytest

from .conftest import skip_or_fail
from .crawlcheck import ROOT

pytestmark = pytest.mark.integration
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
WRITERS, ROUNDS, SERVERS = 4, 25, 10


@pytest.fixture
def pg_env(tmp_path):
    """A fresh, migrated PostgreSQL database for one test; dropped afterwards."""
    psycopg2 = pytest.importorskip("psycopg2")
    try:
        admin = psycopg2.connect(dbname="postgres", connect_timeout=3, **PG)
    except psycopg2.OperationalError as exc:
        skip_or_fail(f"PostgreSQL not reachable at 127.0.0.1:5432: {exc}")
    admin.autocommit = True
    name = f"crawladmin_test_mon_{os.getpid()}_{secrets.token_hex(3)}"
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRAWL", "MONITOR_", "DATABASE_URL", "CELERY_", "DJANGO_"))
    }
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}",
        DJANGO_SECRET_KEY="test-key-" * 6,
        CRAWLADMIN_DATA_DIR=str(tmp_path),
    )
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
        csv = tmp_path / "servers.csv"
        csv.write_text("".join(f"127.0.0.{i + 1}:9\n" for i in range(SERVERS)))
        subprocess.run(
            [sys.executable, "manage.py", "import_servers", "--trusted", str(csv)],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=60,
            capture_output=True,
        )
        yield env, name
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def run_writers(env: dict, mode: str) -> list[dict]:
    start = time.time() + 3.0  # after every process has started Django
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.monitor_writer", mode, str(start), str(ROUNDS if mode == "write" else 5)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WRITERS)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out))
    return outs


def query(name: str, sql: str):
    import psycopg2

    con = psycopg2.connect(dbname=name, **PG)
    try:
        with con.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        con.close()


def test_concurrent_check_writers_lose_and_double_nothing(pg_env):
    env, name = pg_env
    run_writers(env, "write")
    per_server = query(
        name, "SELECT server_id, COUNT(*), COUNT(DISTINCT id) FROM crawladmin_statuscheck GROUP BY server_id"
    )
    assert len(per_server) == SERVERS
    assert {(n, d) for _, n, d in per_server} == {(WRITERS * ROUNDS, WRITERS * ROUNDS)}
    # FAIL_AFTER is exactly the number of checks each server got: the status is confirmed only if
    # every one of the 100 concurrent streak increments survived (a lost update leaves it unknown),
    # and confirmed once only if no two writers both saw the last step (a double leaves two rows).
    monitors = query(name, "SELECT status, streak FROM monitoring_servermonitor")
    assert set(monitors) == {("disconnect", 0)}
    changes = query(name, "SELECT server_id, from_status, to_status FROM monitoring_statuschange")
    assert len(changes) == SERVERS and {(a, b) for _, a, b in changes} == {("unknown", "disconnect")}


def test_concurrent_claimers_take_each_due_server_once(pg_env):
    env, _ = pg_env
    outs = run_writers(env, "claim")
    for r in range(5):
        taken = [sid for out in outs for sid in out["claimed"][r]]
        assert len(taken) == SERVERS and len(set(taken)) == SERVERS, f"round {r}: {sorted(taken)}"


def test_checks_through_redis_and_workers_arrive_exactly_once():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.monitor_checks", "--servers", "30", "--rounds", "4", "--webs", "1", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode == 2:
        skip_or_fail(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["checks"] == out["expected"] == 120 and out["exact"]
    assert out["categories"] == {"normal": 120}
