"""`import_servers` and `check_servers` as an operator runs them (subprocess, embedded SQLite), against a
local web these tests alone use: fast, slow, silent, refusing, 500ing and flapping servers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from testweb import SiteSpec, TestWebServer
from testweb.monitor import refusing_url, scripted

from .crawlcheck import ROOT, clean_env

FLAP = [200, 500, 200, 500, 500, 200, 200]  # answers in order, one per check


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def check_round(env: dict[str, str], *args: str) -> dict[str, dict]:
    proc = manage(env, "check_servers", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {c["server"]: c for c in json.loads(proc.stdout)["checks"]}


@pytest.fixture(scope="module")
def monitored(tmp_path_factory):
    data = tmp_path_factory.mktemp("monitoring")
    env = clean_env(CRAWLADMIN_DATA_DIR=str(data), CRAWL_HEADER_TIMEOUT="0.5", CRAWL_CONNECT_TIMEOUT="1")
    assert manage(env, "migrate", "-v0").returncode == 0
    spec = SiteSpec(n_servers=1, pages_per_server=3, first_octet=210, slow_delay=0.4)
    with (
        TestWebServer(spec) as tw,
        scripted("127.0.0.220", [500]) as erroring,
        scripted("127.0.0.221", FLAP) as flapping,
    ):
        w = tw.web
        servers = {
            "fast": f"http://{w.normal_hosts()[0]}:{tw.port}",
            "slow": f"http://{w.slow_host}:{tw.port}",
            "silent": f"http://{w.silent_host}:{tw.port}",
            "refusing": refusing_url("127.0.0.222").rstrip("/"),
            "erroring": erroring.url.rstrip("/"),
            "flapping": flapping.url.rstrip("/"),
        }
        csv = data / "servers.csv"
        csv.write_text(
            "host_or_url,group,crawler_num,interval,delay_threshold,accepted_codes\n"
            f"{servers['fast']}/,web,1,60,,\n"
            f"{servers['slow']}/,web,1,60,0.2,\n"
            f"{servers['silent'].removeprefix('http://')},down,2,,,\n"
            "not a host,web\n"
            f"{servers['refusing']}/,down,2,,,200-299\n"
            f"{servers['erroring']}/,down,,,,\n"
            f"{servers['fast']}/,web,1,60,,\n"
            f"{servers['flapping']}/,flap,,,,200\n"
            "127.0.0.223,web,,,,99\n"
        )
        first = manage(env, "import_servers", "--trusted", str(csv))
        again = manage(env, "import_servers", "--trusted", str(csv), "--json")
        rounds = [check_round(env) for _ in range(len(FLAP))]
        group = check_round(env, "--group", "web")
        yield env, data, servers, first, again, rounds, group


def test_import_reports_bad_rows_by_line_and_imports_the_rest(monitored):
    _, _, _, first, again, _, _ = monitored
    assert first.returncode == 1  # some rows were bad
    assert "line 5: 'not a host' is not a usable host" in first.stderr
    assert "line 8: same server as line 2" in first.stderr
    assert "line 10: accepted codes" in first.stderr
    assert "imported 6 servers (6 new, 0 updated); 3 bad rows" in first.stdout
    summary = json.loads(again.stdout)
    assert (summary["imported"], summary["created"], summary["updated"]) == (6, 0, 6)
    assert [b["line"] for b in summary["bad"]] == [5, 8, 10]


def test_each_server_gets_its_category(monitored):
    _, _, servers, _, _, rounds, _ = monitored
    expected = {
        "fast": "normal",
        "slow": "delay",
        "silent": "disconnect",
        "refusing": "disconnect",
        "erroring": "error",
    }
    for checks in rounds:
        assert {name: checks[servers[name]]["category"] for name in expected} == expected
    flapping = [checks[servers["flapping"]]["category"] for checks in rounds]
    assert flapping == ["normal" if s == 200 else "error" for s in FLAP]
    fast = rounds[0][servers["fast"]]
    assert fast["status_code"] == 200 and fast["group"] == "web" and fast["crawler_num"] == 1
    assert all(fast["phases_ms"][p] is not None for p in ("dns", "connect", "first_byte", "body"))
    assert rounds[0][servers["refusing"]]["failure"] == "refused"
    assert rounds[0][servers["silent"]]["failure"] == "header_timeout"


def test_timeline_shows_only_confirmed_changes(monitored):
    _, data, servers, _, _, rounds, _ = monitored
    con = sqlite3.connect(data / "crawladmin.sqlite3")
    try:
        rows = con.execute(
            "SELECT s.scheme || '://' || s.host || ':' || s.port, c.from_status, c.to_status"
            " FROM monitoring_statuschange c "
            "JOIN crawladmin_server s ON s.id = c.server_id ORDER BY c.at, c.id"
        ).fetchall()
        checks = con.execute("SELECT COUNT(*) FROM crawladmin_statuscheck WHERE agent = 'monitor'").fetchone()[0]
    finally:
        con.close()
    timeline: dict[str, list[str]] = {}
    for server, a, b in rows:
        timeline.setdefault(server, []).append(f"{a}>{b}")
    assert timeline[servers["fast"]] == ["unknown>normal"]
    assert timeline[servers["slow"]] == ["unknown>delay"]
    for name in ("silent", "refusing"):
        assert timeline[servers[name]] == ["unknown>disconnect"]  # on the second check, not the first
    assert timeline[servers["erroring"]] == ["unknown>error"]
    # 200 500 200 500 500 200 200: the lone 500s are not confirmed, the two in a row are.
    assert timeline[servers["flapping"]] == ["unknown>normal", "normal>error", "error>normal"]
    assert [r[servers["silent"]]["status"] for r in rounds[:2]] == ["unknown", "disconnect"]
    assert checks == 6 * len(FLAP) + 2  # plus the --group web round: fast and slow


def test_group_round_checks_only_that_group(monitored):
    _, _, servers, _, _, _, group = monitored
    assert set(group) == {servers["fast"], servers["slow"]}
