"""bench.throughput --profile: where each millisecond of a page's CPU goes, per process, per statement and per
Python function, from what the benchmark already measures and two sources more:

- per process: the run's `cpu_by_process` (every process tree from /proc) and PostgreSQL's split by process
  (BackendSampler), as milliseconds a page;
- per statement: pg_stat_statements' execution time of each statement of our database over the crawl (the
  private cluster loads it), the top ones by time, with their calls and rows a page (`statement_times`);
- per Python function: py-spy samples each worker (its pool and parse processes with it) and beat from
  outside for the crawl's span (`Sampler`), and each process tree's samples share out the CPU /proc says it
  spent: the top functions by cumulative and by own CPU time a page (`function_times`). Nothing runs in the
  sampled processes, so their figures are a normal run's; py-spy's own CPU is printed apart.

Kept in the run's figures under "profile" (--json), so a later change is paired against it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

TOP_STATEMENTS = 15
TOP_FUNCTIONS = 20
RATE = 100  # samples a second of each process tree
START_TIMEOUT = 15.0  # seconds py-spy may take to attach
STOP_TIMEOUT = 30.0  # seconds py-spy may take to write its output once interrupted

_ROOT = str(Path(__file__).resolve().parent.parent) + "/"
_LIBRARY = re.compile(r"^.*/(site-packages|lib/python3\.\d+)/")


def statement_times(before: dict, after: dict, pages: int, *, tables: set[str], kind, n: int = TOP_STATEMENTS):
    """The `n` statements of our database that took the most execution time between two snapshots, each as
    milliseconds, calls and rows a page, its kind (`kind(query, tables)`: bench.throughput.statement_kind) and
    its text (shortened); with the total of all statements. None without pg_stat_statements."""
    if after.get("statement_ms") is None:
        return None
    old_ms, old = before.get("statement_ms") or {}, before.get("statements") or {}
    rows = []
    for key, ms in after["statement_ms"].items():
        calls, n_rows = after["statements"][key]
        c0, r0 = old.get(key, (0, 0))
        spent = ms - old_ms.get(key, 0.0)
        if calls - c0:
            rows.append((spent, calls - c0, n_rows - r0, key[1]))
    rows.sort(key=lambda r: -r[0])
    per = max(pages, 1)
    return {
        "total_ms_per_page": round(sum(r[0] for r in rows) / per, 4),
        "top": [
            {
                "ms_per_page": round(ms / per, 4),
                "calls_per_page": round(calls / per, 4),
                "rows_per_page": round(n_rows / per, 3),
                "kind": kind(query, tables),
                "query": " ".join(query.split())[:300],
            }
            for ms, calls, n_rows, query in rows[:n]
        ],
    }


class Sampler:
    """py-spy sampling each of `pids` (and their children: a pool's processes, the parse's) from outside, as
    `<directory>/<name>.txt` in py-spy's raw form (one line a stack: frames root first, `;`-joined, then its
    count). Nothing runs inside the sampled processes; the samplers' own CPU is counted apart (`sampler_s`).
    Attaching needs ptrace: root, or `kernel.yama.ptrace_scope` 0."""

    def __init__(self, directory: Path, pids: dict[str, int], rate: int = RATE):
        self.directory, self.pids, self.rate = directory, pids, rate
        self.procs: dict[str, subprocess.Popen] = {}
        self.sampler_s = 0.0

    def __enter__(self) -> Sampler:
        exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
        if exe is None:
            raise RuntimeError("--profile needs py-spy: pip install -r requirements-dev.txt")
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, pid in self.pids.items():
            cmd = [exe, "record", "--pid", str(pid), "--subprocesses", "--nonblocking", "--gil", "--function"]
            cmd += ["--rate", str(self.rate), "--format", "raw", "--output", str(self.directory / f"{name}.txt")]
            with open(self.directory / f"{name}.log", "w") as log:
                self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        for name, proc in self.procs.items():
            log = self.directory / f"{name}.log"
            while "Sampling process" not in (said := log.read_text()):  # py-spy's line once it has attached
                if proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    error = next((x for x in said.splitlines() if x.startswith("Error")), "did not start sampling")
                    raise RuntimeError(f"py-spy could not sample {name} (pid {self.pids[name]}): {error}")
                time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # py-spy writes its output when interrupted
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in self.procs.values():
            while proc.returncode is None:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    self.sampler_s += usage.ru_utime + usage.ru_stime
                elif time.monotonic() > deadline:
                    proc.kill()
                    deadline = float("inf")  # the kill ends it: the next look reaps it
                else:
                    time.sleep(0.05)
        self.procs.clear()


def _key(frame: str) -> str:
    """py-spy's `function (path:line)` as `path:line function`, the path from site-packages, the standard
    library or the project's root."""
    function, _, where = frame.rpartition(" (")
    if not function:
        return frame
    return f"{_LIBRARY.sub('', where.rstrip(')')).removeprefix(_ROOT)} {function}"


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """py-spy's raw output: each stack (innermost last, the `process …` frames of --subprocesses left out)
    with its samples."""
    stacks: Counter[tuple[str, ...]] = Counter()
    try:
        text = path.read_text()
    except OSError:
        return stacks
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = tuple(_key(f) for f in stack.split(";") if f and not f.startswith("process "))
        if frames:
            stacks[frames] += int(count)
    return stacks


def function_times(
    directory: Path, cpu_s: dict[str, float], pages: int, *, sampler_s: float = 0.0, n: int = TOP_FUNCTIONS
) -> dict:
    """Each process's samples (Sampler, `<name>.txt` under `directory`) weighted by the CPU its process tree
    spent (`cpu_s`, from /proc): the top `n` functions by cumulative and by own CPU time, milliseconds a page.
    A sample is a thread seen running Python (or in C it called), so a function's share of the samples is its
    share of the CPU."""
    per = max(pages, 1) / 1000  # seconds to milliseconds a page
    out = {}
    for name, spent in cpu_s.items():
        stacks = read_stacks(directory / f"{name}.txt")
        total = sum(stacks.values())
        if not total:
            continue
        own: Counter[str] = Counter()
        cumulative: Counter[str] = Counter()
        for frames, count in stacks.items():
            own[frames[-1]] += count
            cumulative.update(dict.fromkeys(set(frames), count))
        scale = spent / total / per
        out[name] = {
            "cpu_ms_per_page": round(spent / per, 4),
            "samples": total,
            **{
                order: [[key, round(c * scale, 4)] for key, c in counter.most_common(n)]
                for order, counter in (("cumulative", cumulative), ("own", own))
            },
        }
    if out:
        out["py-spy"] = {"sampler_ms_per_page": round(sampler_s / per, 4)}
    return out


def processes_ms(r: dict) -> dict:
    """The run's CPU by process (and PostgreSQL's by kind of process), milliseconds a page."""
    per = max(r["pages"], 1) / 1000
    out = {name: round(s / per, 4) for name, s in r["cpu_by_process"].items()}
    out.update({f"postgres: {k}": round(v / per, 4) for k, v in r["postgres_cpu_split_s"].items()})
    return out


def print_profile(profile: dict) -> None:
    print("   == profile: milliseconds of CPU a page ==")
    print("   by process: " + ", ".join(f"{k} {v:.3f}" for k, v in profile["processes"].items()))
    statements = profile["statements"]
    if statements:
        print(
            f"   by statement (pg_stat_statements, execution time {statements['total_ms_per_page']:.3f} ms a page in "
            "all; ms · calls · rows a page):"
        )
        for s in statements["top"]:
            print(
                f"      {s['ms_per_page']:7.3f} {s['calls_per_page']:7.3f} {s['rows_per_page']:8.2f}  {s['kind']}: "
                f"{s['query'][:110]}"
            )
    functions = dict(profile["functions"])
    spy = functions.pop("py-spy", None)
    for name, f in functions.items():
        print(
            f"   {name}: {f['cpu_ms_per_page']:.3f} ms a page, {f['samples']} samples (py-spy); "
            "top functions, cumulative | own:"
        )
        for (ck, cv), (ok, ov) in zip(f["cumulative"], f["own"], strict=False):
            print(f"      {cv:7.3f} {ck[:62]:<62} | {ov:7.3f} {ok[:62]}")
    if spy:
        print(f"   py-spy's own CPU (not in the figures above): {spy['sampler_ms_per_page']:.3f} ms a page")
