"""The demo never harms another: a second one on the same data directory, or one whose --addr is taken, is
refused in one line before the database is touched; a demo server is stopped and started from another
terminal with `manage.py testweb down|up NAME`; serving on an address requests will not name gets a hint."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from crawladmin.demo_control import demo_lock, down_watcher
from testweb import SiteSpec, TestWebServer

from .crawlcheck import ROOT, clean_env

DEADLINE = 60.0


def manage(data: Path, *args: str) -> subprocess.CompletedProcess:
    env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def _tables(data: Path) -> set[str]:
    db = data / "crawladmin.sqlite3"
    if not db.exists():
        return set()
    con = sqlite3.connect(db)
    try:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def test_a_second_demo_on_the_same_data_dir_is_refused_before_touching_the_database(tmp_path):
    with demo_lock(tmp_path):  # the first demo
        second = manage(tmp_path, "demo", "--no-serve")
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "a demo is already running on" in lines[0] and "CRAWLADMIN_DATA_DIR" in lines[0]
    assert "Traceback" not in second.stderr
    assert _tables(tmp_path) == set()  # no migration, no servers, no password: nothing written


def test_a_demo_whose_port_is_taken_is_refused_before_touching_the_database(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = manage(tmp_path, "demo", "--addr", f"127.0.0.1:{port}")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"127.0.0.1:{port}: cannot serve there" in run.stderr and "--addr 127.0.0.1:8001" in run.stderr
    assert _tables(tmp_path) == set()


def _answers(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not predicate():
        assert time.monotonic() < deadline, f"not within {DEADLINE} s: {what}"
        time.sleep(0.2)


def test_testweb_down_and_up_stop_and_start_one_server_of_the_running_demo(tmp_path):
    assert manage(tmp_path, "testweb", "down", "127.0.0.10").returncode == 1  # no demo running: refused
    with TestWebServer(SiteSpec()) as web, demo_lock(tmp_path):
        hosts = web.web.hosts()
        with down_watcher(tmp_path, web.set_down, hosts):
            host = hosts[0]
            assert _answers(host, web.port)
            down = manage(tmp_path, "testweb", "down", f"http://{host}:{web.port}")  # the dashboard's spelling
            assert down.returncode == 0 and "stops answering" in down.stdout, down.stderr
            _until(lambda: host in web.down_hosts, "the server is down")
            assert not _answers(host, web.port) and _answers(hosts[1], web.port)
            up = manage(tmp_path, "testweb", "up", host)
            assert up.returncode == 0, up.stderr
            _until(lambda: host not in web.down_hosts, "the server answers again")
            assert _answers(host, web.port)
            typo = manage(tmp_path, "testweb", "down", "127.0.0.99")
            assert typo.returncode == 1 and "is not a server of the demo" in typo.stderr


@pytest.mark.parametrize(("addr", "hinted"), [("0.0.0.0:8000", True), ("127.0.0.1:8000", False)])
def test_serving_on_an_address_requests_will_not_name_hints_at_allowed_hosts(addr, hinted):
    from crawladmin.management.commands.demo import allowed_hosts_hint

    hint = allowed_hosts_hint(addr)
    assert (hint is not None) == hinted
    if hinted:
        assert "DJANGO_ALLOWED_HOSTS" in hint and "400" in hint


def _lines_until(proc: subprocess.Popen, marker: str, deadline: float) -> list[str]:
    """The demo's output up to the line holding `marker` (a bounded wait: the reader is a thread)."""
    import threading

    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if marker in line:
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    seen.wait(max(0.0, deadline - time.monotonic()))
    assert seen.is_set(), f"the demo never said {marker!r}: {''.join(lines)[-2000:]}"
    return lines


def test_the_serving_demo_sends_the_down_of_testweb_down_to_a_local_receiver_within_a_minute(tmp_path):
    import re

    from testweb.alerts import webhook_receiver
    from testweb.ports import free_port

    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    with webhook_receiver() as receiver:
        demo = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--addr", f"127.0.0.1:{free_port()}"]
            + ["--channel", f"{receiver.base}/"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            lines = _lines_until(demo, "loopback destinations (127.0.0.0/8) are allowed", time.monotonic() + 400)
            text = "".join(lines)
            assert "alerts: channel demo: json://127.0.0.1:" in text
            host = re.search(r"testweb down (\S+)`", text).group(1)
            down = manage(tmp_path, "testweb", "down", host)
            assert down.returncode == 0, down.stderr
            stopped = time.monotonic()
            deadline = stopped + 60
            while time.monotonic() < deadline:
                kinds = [(e["kind"], e["server"]) for r in receiver.ok() for e in r.body.get("events", [])]
                if any(kind == "down" and host in server for kind, server in kinds):
                    break
                time.sleep(0.5)
            else:
                raise AssertionError(f"no down for {host} within 60 s; received {receiver.received}")
            assert time.monotonic() - stopped < 60
        finally:
            demo.terminate()
            try:
                demo.wait(30)
            except subprocess.TimeoutExpired:
                demo.kill()
                demo.wait(10)
