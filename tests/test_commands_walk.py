"""Every project command, as a user runs it (`python manage.py NAME` in a subprocess), in each situation a
newcomer or an operator meets: a fresh data directory, an unsupported or unreachable DATABASE_URL, a
PostgreSQL database that does not exist or has no schema yet, a missing file, a file that is not UTF-8,
a reader that closed the pipe. None of them may end in a traceback.

The commands are found as Django finds them (the commands of this repository's apps), so a command added
later is walked without being named here. Runs go three at a time to keep the walk's wall time down.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from crawladmin.cli import EXIT_BROKEN_PIPE, project_command
from testweb.cluster import ADMIN_PG, ServiceMissing, fresh_database

from .crawlcheck import ROOT, clean_env

pytestmark = pytest.mark.slow  # some ten minutes of subprocesses: `make test-slow`

PARALLEL = 3
TIMEOUT = 300.0

# Arguments for a command that would otherwise run for long when given none (a server, a simulation of
# hours). A command not named here is run with no arguments at all.
BRIEF_ARGS: dict[str, list[str]] = {
    "simulate": ["hybrid", "--seeds", "1", "--servers", "5", "--robots", "2"],
    "testweb": ["--no-such-option"],
}
# Commands left out of a situation, with why. The demo crawls a whole test web and serves: it is run on a
# fresh data directory by tests/test_crawl_embedded.py::test_demo_crawls_the_test_web_and_prints_a_fresh_admin_password.
SKIP: dict[tuple[str, str], str] = {
    ("demo", "fresh"): "the demo's own test runs it on a fresh data directory",
    ("demo", "postgres-unmigrated"): "the demo migrates its database itself, then crawls a whole test web",
}
# Option names that take a path (read or written).
FILE_OPTION = re.compile(r"(file|path|profiles|edges|csv|out|output|plot|config|yaml)$")


def project_commands() -> list[str]:
    return sorted(name for name in get_commands() if project_command(name))


def _parser(name: str) -> argparse.ArgumentParser:
    return load_command_class(get_commands()[name], name).create_parser("manage.py", name)


def file_arguments(name: str, path: str) -> list[list[str]]:
    """Argument lists that hand `path` to each place the command takes one: all its positional arguments
    at once, then each option whose name says it takes a file."""
    parser = _parser(name)
    positionals = [a for a in parser._actions if not a.option_strings and a.nargs != 0]
    runs: list[list[str]] = []
    filled = []
    for action in positionals:
        if action.choices:
            filled.append(str(next(iter(action.choices))))
        else:
            filled.append(path)
    if positionals and any(not a.choices for a in positionals):
        runs.append(list(filled))
    for action in parser._actions:
        if not action.option_strings or action.nargs == 0 or action.dest in ("settings", "pythonpath"):
            continue
        if FILE_OPTION.search(action.dest):
            option = max(action.option_strings, key=len)
            runs.append([*[p if p != path else "x" for p in filled], option, path])
    return runs


@dataclass
class Run:
    name: str
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def shown(self) -> str:
        return f"manage.py {self.name} {' '.join(self.args)} (exit {self.returncode}):\n{self.stderr[-2000:]}"


@dataclass
class Walk:
    env: dict[str, str]
    runs: list[Run] = field(default_factory=list)

    def run(self, name: str, args: list[str], *, env: dict[str, str] | None = None, closed_pipe: bool = False) -> Run:
        command = [sys.executable, "manage.py", name, *args]
        if closed_pipe:
            # The reader goes away before the command writes: what `manage.py NAME | head -0` does.
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env or self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )
            proc.stdout.close()
            try:
                stderr = proc.stderr.read()
                proc.wait(TIMEOUT)
            finally:
                if proc.poll() is None:
                    proc.kill()
            return Run(name, args, proc.returncode, "", stderr)
        proc = subprocess.run(
            command, cwd=ROOT, env=env or self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=TIMEOUT,
        )
        return Run(name, args, proc.returncode, proc.stdout, proc.stderr)


def walk(situation: str, jobs: list[tuple[str, Callable[[], Run]]]) -> list[Run]:
    jobs = [(name, job) for name, job in jobs if (name, situation) not in SKIP]
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda job: job[1](), jobs))


def traceback_free(runs: list[Run]) -> None:
    bad = [r.shown() for r in runs if "Traceback" in r.stdout + r.stderr or "Exception ignored" in r.stderr]
    assert not bad, f"{len(bad)} of {len(runs)} runs printed a traceback:\n\n" + "\n\n".join(bad)


def _error_lines(run: Run) -> list[str]:
    # tqdm's progress bars redraw on stderr with carriage returns; they are not messages.
    return [line for line in run.stderr.splitlines() if line.strip() and "\r" not in line and "it/s]" not in line]


def brief_args(name: str) -> list[str]:
    return list(BRIEF_ARGS.get(name, []))


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp), **extra)
    env.pop("CRAWL_ALLOW_PRIVATE", None)
    return env


def test_every_project_command_is_found_including_the_ones_of_every_app():
    names = project_commands()
    # A sample from each app's commands: the walk below covers whatever else is there.
    for expected in ("crawl", "import_servers", "add_channel", "dead_links", "export_warc", "rank", "analyze"):
        assert expected in names
    assert "migrate" not in names and "runserver" not in names


def test_every_command_on_a_fresh_data_dir_into_a_closed_pipe_creates_the_schema_and_ends_quietly(tmp_path):
    """Two situations in one walk (each run costs a fresh schema): a fresh data directory, and a reader
    that closed the pipe (`manage.py NAME | head -0`)."""

    def job(name: str) -> Callable[[], Run]:
        data = tmp_path / name
        return lambda: Walk(env_for(data)).run(name, brief_args(name), closed_pipe=True)

    runs = walk("fresh", [(name, job(name)) for name in project_commands()])
    traceback_free(runs)
    by_name = {r.name: r for r in runs}
    # These needed the schema and died on "no such table": now they create it, then write their output
    # into the closed pipe and end quietly with the shell's SIGPIPE status.
    for name in ("send_notifications", "schedule_table", "dashboard_refresh", "dead_links"):
        run = by_name[name]
        assert run.returncode == EXIT_BROKEN_PIPE and not _error_lines(run), run.shown()
        assert _tables(tmp_path / name), name


def _tables(data: Path) -> set[str]:
    import sqlite3

    con = sqlite3.connect(data / "crawladmin.sqlite3")
    try:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def test_a_command_on_a_fresh_data_dir_creates_the_schema_and_works(tmp_path):
    walker = Walk(env_for(tmp_path))
    added = walker.run("add_channel", ["ops", "json://127.0.0.1:9/hook"])
    assert added.returncode == 0, added.shown()
    sent = walker.run("notify_test", ["nosuch"])
    assert sent.returncode == 1 and _error_lines(sent) == ["CommandError: no channel named 'nosuch'"], sent.shown()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("migrated")
    run = Walk(env_for(data)).run("migrate", ["--verbosity", "0"])
    assert run.returncode == 0, run.shown()
    return data


def _file_walk(tmp_path: Path, migrated: Path, make: Callable[[Path], None]) -> list[Run]:
    jobs = []
    for name in project_commands():
        for i, _ in enumerate(file_arguments(name, "PATH")):
            def job(name: str = name, i: int = i) -> Run:
                path = tmp_path / f"{name}-{i}" / "input.csv"
                make(path)
                args = file_arguments(name, str(path))[i]
                return Walk(env_for(migrated)).run(name, args)

            jobs.append((name, job))
    return walk("file", jobs)


def test_every_command_given_a_missing_file_ends_in_one_line(tmp_path, migrated):
    runs = _file_walk(tmp_path, migrated, lambda path: None)
    assert len(runs) >= 8  # every command with a positional argument, and the file options
    traceback_free(runs)
    reading = [r for r in runs if r.name in ("import_servers", "schedule_table") and r.returncode]
    assert reading and all("input.csv" in " ".join(_error_lines(r)) for r in reading)


def test_every_command_given_a_file_that_is_not_utf8_ends_in_one_line(tmp_path, migrated):
    def latin1(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes("server,hour,load\ncafé,1,0.5\n".encode("latin-1") + b"\xff\xfe\x80\n")

    runs = _file_walk(tmp_path, migrated, latin1)
    traceback_free(runs)
    for r in runs:
        if r.name in ("import_servers", "schedule_table"):
            assert r.returncode != 0 and any("UTF-8" in line for line in _error_lines(r)), r.shown()


def test_every_command_refuses_an_unsupported_database_url_naming_its_scheme(tmp_path):
    env = env_for(tmp_path, DATABASE_URL="mysql://crawl:s3cret@db.example/crawl")
    walker = Walk(env)
    runs = walk("bad-url", [(name, lambda name=name: walker.run(name, brief_args(name)))
                            for name in project_commands()])
    traceback_free(runs)
    for r in runs:
        lines = _error_lines(r)
        assert r.returncode != 0 and len(lines) == 1 and "'mysql://'" in lines[0], r.shown()
        assert "s3cret" not in r.stderr


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is: nothing listens there


def test_every_command_on_an_unreachable_database_names_host_port_database_and_cause(tmp_path):
    port = _closed_port()
    url = f"postgres://crawl@127.0.0.1:{port}/crawlhere"
    env = env_for(tmp_path, DATABASE_URL=url, DJANGO_SECRET_KEY="walk-test-key-" * 4)
    walker = Walk(env)
    runs = walk("unreachable", [(name, lambda name=name: walker.run(name, brief_args(name)))
                                for name in project_commands()])
    traceback_free(runs)
    touched = [r for r in runs if "cannot connect" in r.stderr]
    assert len(touched) >= 8, [r.shown() for r in runs]
    for r in touched:
        (line,) = [line for line in _error_lines(r) if "cannot connect" in line]
        assert f"127.0.0.1:{port}" in line and "'crawlhere'" in line and "refused" in line.lower(), r.shown()


@pytest.fixture
def postgres_url() -> str:
    import psycopg2

    try:
        psycopg2.connect(ADMIN_PG, connect_timeout=5).close()
    except psycopg2.OperationalError as exc:
        raise ServiceMissing(f"PostgreSQL not reachable at {ADMIN_PG}: {exc}") from None
    return ADMIN_PG


@pytest.mark.integration
def test_every_command_on_a_postgres_database_that_does_not_exist_says_so_in_one_line(tmp_path, postgres_url):
    name = f"crawladmin_nosuch_{uuid.uuid4().hex[:8]}"
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    env = env_for(tmp_path, DATABASE_URL=url, DJANGO_SECRET_KEY="walk-test-key-" * 4)
    walker = Walk(env)
    runs = walk("postgres-missing", [(cmd, lambda cmd=cmd: walker.run(cmd, brief_args(cmd)))
                                     for cmd in project_commands()])
    traceback_free(runs)
    touched = [r for r in runs if "cannot connect" in r.stderr]
    assert len(touched) >= 8
    for r in touched:
        assert f"'{name}'" in r.stderr and "does not exist" in r.stderr, r.shown()


@pytest.mark.integration
def test_every_command_on_an_unmigrated_postgres_says_to_migrate(tmp_path, postgres_url):
    with fresh_database("walk") as url:
        walker = Walk(env_for(tmp_path, DATABASE_URL=url, DJANGO_SECRET_KEY="walk-test-key-" * 4))
        runs = walk("postgres-unmigrated", [(cmd, lambda cmd=cmd: walker.run(cmd, brief_args(cmd)))
                                            for cmd in project_commands()])
    traceback_free(runs)
    told = [r for r in runs if "manage.py migrate" in r.stderr]
    assert len(told) >= 8
    for r in told:
        assert r.returncode != 0 and len(_error_lines(r)) == 1, r.shown()


def test_the_wrapper_is_what_manage_py_runs():
    # Every command goes through crawladmin.cli: a command added later needs nothing to be covered.
    text = (ROOT / "manage.py").read_text()
    assert "crawladmin.cli" in text

