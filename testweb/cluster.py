"""Real services for the integration tests and the benchmarks: a fresh PostgreSQL database, a private
redis-server, and `celery` worker and beat processes, each started and stopped by whoever uses them.

A service this machine lacks raises ServiceMissing: the tests turn it into a skip (a failure in CI,
tests/conftest.py), a benchmark lets it end the run with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testweb.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PG = os.environ.get("CRAWLADMIN_TEST_PG", "postgres://postgres@127.0.0.1:5432/postgres")


class ServiceMissing(RuntimeError):
    """A real service (PostgreSQL, redis-server, their binaries) is not available on this machine."""


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A new, empty database named crawladmin_bench_<prefix>_…; dropped afterwards, whatever happens."""
    import psycopg2

    admin = psycopg2.connect(ADMIN_PG, connect_timeout=5)
    admin.autocommit = True
    name = f"crawladmin_bench_{prefix}_{uuid.uuid4().hex[:8]}"
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield ADMIN_PG.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new, empty database on the local PostgreSQL (fresh_database, shared with the benchmarks); dropped
    afterwards. A PostgreSQL that cannot be reached raises ServiceMissing."""
    import psycopg2

    try:
        psycopg2.connect(ADMIN_PG, connect_timeout=5).close()
    except psycopg2.OperationalError as exc:
        raise ServiceMissing(f"PostgreSQL not reachable at {ADMIN_PG}: {exc}") from None
    with fresh_database("it") as url:
        yield url


@contextmanager
def redis_process(tmp: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A private redis-server on a free loopback port (no persistence): (its URL, its process); stopped
    afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceMissing("redis-server is not installed")
    port = free_port()
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
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    """A private redis-server on a free loopback port (no persistence); its URL; stopped afterwards."""
    with redis_process(tmp) as (url, _proc):
        yield url


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


# -- Services a test may restart (the chaos test, tests/test_chaos.py) --------------------------------


def _wait_for_port(port: int, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} is not listening on port {port}") from None
            time.sleep(0.05)


def _postgres_bindir() -> Path | None:
    """The directory of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return candidates[-1].parent if candidates else None


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb into a temporary directory, a free port), so it can
    be restarted without touching the shared server. PostgreSQL refuses to run as root: as root, the
    cluster belongs to the `postgres` user and every pg_ctl runs through `runuser`."""

    def __init__(self, bindir: Path, root: Path, port: int, as_user: list[str], conf: dict | None = None):
        self.bindir, self.root, self.port, self.as_user = bindir, root, port, as_user
        self.conf_overrides = dict(conf or {})
        self.datadir = root / "data"
        self.logfile = root / "postgres.log"
        self.url = f"postgres://postgres@127.0.0.1:{port}/crawladmin"

    def _run(self, *args: str, timeout: float = 120) -> None:
        proc = subprocess.run([*self.as_user, *args], capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")

    def _pg_ctl(self, *args: str) -> None:
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", "60", *args
        )

    def init(self) -> None:
        self._run(str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        # Speed over durability: the machine does not crash in a test, and a `pg_ctl restart -m fast`
        # (a clean shutdown) loses nothing without fsync.
        conf = {
            "port": self.port,
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.root}'",
            "max_connections": 200,
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "'128MB'",
        } | self.conf_overrides
        with open(self.datadir / "postgresql.conf", "a") as f:
            f.write("".join(f"\n{k} = {v}" for k, v in conf.items()) + "\n")

    def start(self) -> None:
        self._pg_ctl("start")
        _wait_for_port(self.port, "PostgreSQL")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session is cut, the server is back seconds later."""
        self._pg_ctl("restart", "-m", "fast")
        _wait_for_port(self.port, "PostgreSQL")

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "immediate")

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""


@contextmanager
def private_postgres(tmp: Path, *, conf: dict | None = None) -> Iterator[PrivatePostgres]:
    """A private PostgreSQL cluster with an empty database `crawladmin`; `.url`, `.restart()`. `conf`
    overrides postgresql.conf settings (the defaults trade durability for speed; a benchmark that measures
    PostgreSQL's work turns fsync and synchronous_commit back on).

    `tmp` is unused for the cluster's files when running as root: the `postgres` user needs a directory
    it can reach, so the cluster lives in its own directory under the system temp dir (removed after)."""
    import tempfile

    import psycopg2

    bindir = _postgres_bindir()
    if bindir is None or not (bindir / "initdb").exists():
        raise ServiceMissing("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    as_root = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="crawladmin-pg-", dir=None if as_root else tmp))
    as_user: list[str] = []
    if as_root:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise ServiceMissing("running as root without runuser: cannot start PostgreSQL as the postgres user")
        shutil.chown(root, "postgres", "postgres")
        as_user = [runuser, "-u", "postgres", "--"]
    pg = PrivatePostgres(bindir, root, free_port(), as_user, conf)
    try:
        pg.init()
        pg.start()
        con = psycopg2.connect(host="127.0.0.1", port=pg.port, user="postgres", dbname="postgres")
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("CREATE DATABASE crawladmin")
        con.close()
        yield pg
    finally:
        try:
            pg.stop()
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(root, ignore_errors=True)


class AofRedis:
    """A private redis-server with the append-only file on (fsync every second), restartable on the
    same port and directory: what a production broker keeps across a restart, this one keeps too."""

    def __init__(self, binary: str, datadir: Path, port: int):
        self.binary, self.datadir, self.port = binary, datadir, port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        args = ["--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.datadir), "--save", ""]
        args += ["--appendonly", "yes", "--appendfsync", "everysec"]
        self.log = open(self.datadir / "redis.log", "a")
        self.proc = subprocess.Popen([self.binary, *args], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not self._pong():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {self.datadir / 'redis.log'}")
            time.sleep(0.05)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """SIGTERM: Redis fsyncs the append-only file and exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.log.close()

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def redis_server_aof(tmp: Path) -> Iterator[AofRedis]:
    """A private redis-server with persistence (AOF, fsync every second); `.url`, `.restart()`."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceMissing("redis-server is not installed")
    datadir = tmp / "redis"
    datadir.mkdir(exist_ok=True)
    server = AofRedis(binary, datadir, free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
