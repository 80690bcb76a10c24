"""Monitors beyond one HTTP GET, end to end as an operator runs them (subprocesses on embedded SQLite, the
web app serving the ping URL, a real `json://` receiver on loopback): a heartbeat that stops being pinged
sends exactly one "down" after its grace and one "up" when pinged again; a TCP monitor on a closed port goes
down and one on an open port stays normal; uptime_report's CSV has its columns and the heartbeat's outage."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime

import pytest

from monitoring.report import COLUMNS
from testweb.alerts import free_port, webhook_receiver
from testweb.monitor_kinds import closed_port, tcp_listener

from .crawlcheck import ROOT, clean_env

PERIOD_S, GRACE_S = 20, 10  # late once 30 s pass without a ping: far longer than one round on a loaded machine


def manage(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stderr[-3000:]}"
    return proc


def get(url: str, timeout: float = 10.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def web_app(env: dict[str, str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if get(f"http://127.0.0.1:{port}/healthz", timeout=2) == 200:
                return proc
        except OSError:
            pass
        assert proc.poll() is None, "the web app exited"
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("the web app did not answer within 120 s")


def events(rx) -> list[tuple[str, str, str]]:
    return [(e["server"], e["kind"], e["at"]) for r in rx.received for e in r.body["events"]]


@pytest.mark.slow
def test_heartbeat_down_once_after_its_grace_up_when_pinged_tcp_closed_down_open_normal_and_the_report(tmp_path):
    port = free_port()
    env = clean_env(
        CRAWLADMIN_DATA_DIR=str(tmp_path), MONITOR_RETRIES="0", MONITOR_PING_BASE_URL=f"http://127.0.0.1:{port}"
    )
    manage(env, "migrate", "-v0")
    with webhook_receiver() as rx, tcp_listener() as listener:
        web = web_app(env, port)
        try:
            manage(env, "add_channel", "ops", f"{rx.base}/ops", "--events", "down,up")
            added = manage(
                env, "add_monitor", "heartbeat", "nightly backup", "--name", "backup",
                "--every", str(PERIOD_S), "--grace", str(GRACE_S),
            )  # fmt: skip
            ping = next(line.split()[-1] for line in added.stdout.splitlines() if "/ping/" in line)
            assert ping.startswith(f"http://127.0.0.1:{port}/ping/")
            manage(env, "add_monitor", "tcp", f"127.0.0.1:{closed_port()}", "--name", "closed port")
            manage(env, "add_monitor", "tcp", listener.target, "--name", "open port")

            for _ in range(2):  # two rounds: the closed port is confirmed down (MONITOR_FAIL_AFTER=2)
                assert get(ping) == 200  # the job runs before each round: never late however slow a round is
                pinged = time.monotonic()
                manage(env, "check_servers")
            assert [(s, k) for s, k, _ in events(rx)] == [("closed port", "down")]

            # The job stops pinging: once period + grace have passed, two late rounds confirm it down.
            time.sleep(max(0.0, PERIOD_S + GRACE_S + 1 - (time.monotonic() - pinged)))
            for _ in range(3):
                manage(env, "check_servers")
            assert [(s, k) for s, k, _ in events(rx)] == [("closed port", "down"), ("backup", "down")]

            assert get(ping) == 200  # the job runs again
            rounds = json.loads(manage(env, "check_servers", "--json").stdout)["checks"]
            status = {c["name"]: c["status"] for c in rounds}
            assert status == {"backup": "normal", "closed port": "disconnect", "open port": "normal"}
            manage(env, "check_servers")
            got = events(rx)
            assert [(s, k) for s, k, _ in got] == [("closed port", "down"), ("backup", "down"), ("backup", "up")]

            out = manage(env, "uptime_report", "--format", "csv").stdout
        finally:
            web.terminate()
            web.wait(timeout=30)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS
    by_name = {r["server"]: r for r in rows}
    down_at, up_at = (datetime.fromisoformat(at) for s, _, at in got if s == "backup")
    outage = (up_at - down_at).total_seconds()
    backup = by_name["backup"]
    assert abs(int(backup["downtime_seconds"]) - outage) <= 1 and outage > 0
    assert backup["incidents"] == "1" and abs(int(backup["longest_incident_seconds"]) - outage) <= 1
    assert 0 < float(backup["uptime_percent"]) < 100
    assert by_name["open port"]["downtime_seconds"] == "0" and by_name["open port"]["uptime_percent"] == "100.0"
    assert by_name["closed port"]["incidents"] == "1"
