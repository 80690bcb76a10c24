"""The CPU profiles of bench.throughput --profile: py-spy samples a process and its children from outside
(bench.cpu_profile.Sampler), and the samples share out the CPU the process tree spent, by function, in
milliseconds a page. Threads asleep are not sampled; a child process counts with its parent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cpu_profile import Sampler, function_times, read_stacks, statement_times
from bench.harness.proc import tree_cpu
from bench.throughput import statement_kind

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import time

def cubes(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(i * i * i for i in range(2000))

cubes(3.5)
"""

# A parent spinning in `squares` on one thread while another sleeps, and a child it starts spinning in `cubes`:
# on two cores, the parent's `squares` and the child's `cubes` each take about half of the tree's CPU.
PARENT = """
import subprocess, sys, threading, time

def squares(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(i * i for i in range(2000))

def sleeper():
    time.sleep(4)

child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
threads = [threading.Thread(target=squares, args=(3.5,)), threading.Thread(target=sleeper)]
for t in threads:
    t.start()
for t in threads:
    t.join()
child.wait()
"""


def test_py_spy_shares_out_a_process_trees_cpu_by_function_its_children_with_it(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", PARENT, CHILD], cwd=ROOT)
    try:
        time.sleep(0.3)
        cpu0 = tree_cpu(proc.pid)
        with Sampler(tmp_path, {"worker": proc.pid}) as spy:
            time.sleep(2.5)
            cpu = tree_cpu(proc.pid) - cpu0
    finally:
        proc.wait(timeout=30)
    assert spy.sampler_s > 0  # py-spy's own CPU, counted apart
    stacks = read_stacks(tmp_path / "worker.txt")
    assert sum(stacks.values()) > 100
    assert not any(frames[-1].endswith(" sleeper") for frames in stacks)  # a sleeping thread is not sampled
    got = function_times(tmp_path, {"worker": cpu}, pages=100, sampler_s=spy.sampler_s)
    cumulative = dict(got["worker"]["cumulative"])
    squares = next(k for k in cumulative if k.endswith(" squares"))
    cubes = next(k for k in cumulative if k.endswith(" cubes"))
    total = cpu * 1000 / 100  # the tree's CPU, milliseconds a page
    assert got["worker"]["cpu_ms_per_page"] == round(total, 4)
    # Each spinner about half of the tree, the child's counted with its parent's.
    assert 0.25 * total < cumulative[squares] < 0.75 * total
    assert 0.25 * total < cumulative[cubes] < 0.75 * total
    assert got["py-spy"]["sampler_ms_per_page"] > 0


def test_a_process_py_spy_cannot_sample_is_one_clear_error(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with pytest.raises(RuntimeError) as raised:
        with Sampler(tmp_path, {"worker": gone.pid}):
            pass
    said = str(raised.value)
    assert said.startswith(f"py-spy could not sample worker (pid {gone.pid}): ") and "\n" not in said


def test_a_process_without_samples_is_left_out(tmp_path):
    assert function_times(tmp_path, {"worker": 1.0}, pages=10) == {}


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
