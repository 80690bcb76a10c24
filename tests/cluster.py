"""Real services for the integration tests: a fresh PostgreSQL database, a private redis-server, and
`celery` worker and beat processes, each started and stopped by the test that uses them."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.pgdb import ADMIN_PG, fresh_database

from .conftest import skip_or_fail
from .crawlcheck import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new, empty database on the local PostgreSQL (bench.pgdb's, shared with the benchmarks); dropped
    afterwards. A PostgreSQL that cannot be reached skips the test, or fails it in CI."""
    import psycopg2

    try:
        psycopg2.connect(ADMIN_PG, connect_timeout=5).close()
    except psycopg2.OperationalError as exc:
        skip_or_fail(f"PostgreSQL not reachable at {ADMIN_PG}: {exc}")
    with fresh_database("it") as url:
        yield url


@contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    """A private redis-server on a free loopback port (no persistence); stopped afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        skip_or_fail("redis-server is not installed")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"manage.py {' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    return proc


class Processes:
    """Long-running celery processes, each in its own process group, stopped warm then cold."""

    def __init__(self, env: dict[str, str], logdir: Path):
        self.env, self.logdir = env, logdir
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, *celery_args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "crawladmin", *celery_args],
            cwd=ROOT,
            env=env or self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append((name, proc))
        return proc

    def worker(self, name: str, queues: str, *, concurrency: int = 4, pool: str = "threads") -> subprocess.Popen:
        return self.start(
            name,
            "worker",
            "-Q",
            queues,
            "-P",
            pool,
            "-c",
            str(concurrency),
            "-n",
            f"{name}@%h",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            "-l",
            "WARNING",
        )

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text()

    def stop(self) -> None:
        for _, proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for _, proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
