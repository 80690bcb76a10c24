"""The CPU profiles of bench.throughput --profile: each process samples itself (crawladmin.profiling) while the
benchmark's flag file is there, a forked child writes its own profile under its worker's pid, and the
benchmark merges them by process and prints milliseconds a page (bench.cpu_profile). In a child process of
its own, so no sampler outlives the test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.cpu_profile import function_times, statement_times
from bench.throughput import statement_kind

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import os, sys, threading, time
from pathlib import Path
from crawladmin.profiling import profile_start

directory = Path(sys.argv[1])
sampler = profile_start(str(directory))

def squares(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(i * i for i in range(2000))

def sleeper():
    time.sleep(0.6)

squares(0.2)  # before the flag: not counted
(directory / "on").touch()
time.sleep(0.6)  # the flag is looked for every half second
threads = [threading.Thread(target=squares, args=(0.4,)), threading.Thread(target=sleeper)]
for t in threads:
    t.start()
pid = os.fork()
if pid == 0:
    squares(0.3)
    os._exit(0)
os.waitpid(pid, 0)
for t in threads:
    t.join()
(directory / "on").unlink()
time.sleep(0.7)
sampler.stop()
print(os.getpid(), pid)
"""


def test_each_process_profiles_its_cpu_by_function_while_the_flag_is_there(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    parent, child = (int(x) for x in out.stdout.split())
    mine = json.loads((tmp_path / f"{parent}.json").read_text())
    forked = json.loads((tmp_path / f"{child}.json").read_text())
    squares = next(k for k in mine["cumulative"] if k.endswith(" squares"))
    # The thread's 0.4 s, and not the 0.2 s spent before the flag (a sample's granularity aside).
    assert 0.25 < mine["cumulative"][squares] < 0.5
    assert 0.2 < forked["cumulative"][squares] < 0.4 and forked["origin"] == parent
    # Merged by process: the child counts with the process it was forked from; milliseconds a page.
    got = function_times(tmp_path, {parent: "worker"}, pages=100)
    assert list(got) == ["worker"] and got["worker"]["processes"] == 2
    top = dict(got["worker"]["cumulative"])
    assert 4.5 < top[squares] < 9.0  # 0.4 + 0.3 s over 100 pages: 7 ms a page


def test_statements_are_ranked_by_their_time_a_page():
    tables = {"crawladmin_page", "crawladmin_url"}
    a, b = (1, "UPDATE crawladmin_page SET x = $1"), (2, "SELECT id FROM crawladmin_url WHERE id = $1")
    before = {"statements": {a: (10, 10)}, "statement_ms": {a: 5.0}}
    after = {"statements": {a: (30, 30), b: (400, 400)}, "statement_ms": {a: 85.0, b: 40.0}}
    got = statement_times(before, after, 20, tables=tables, kind=statement_kind)
    assert got["total_ms_per_page"] == 6.0
    assert [(s["kind"], s["ms_per_page"], s["calls_per_page"], s["rows_per_page"]) for s in got["top"]] == [
        ("UPDATE page", 4.0, 1.0, 1.0),
        ("SELECT url", 2.0, 20.0, 20.0),
    ]
    assert statement_times(before, {**after, "statement_ms": None}, 20, tables=tables, kind=statement_kind) is None
