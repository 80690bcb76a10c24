"""bench.throughput --profile: where each millisecond of a page's CPU goes, per process, per statement and per
Python function, from what the benchmark already measures and two sources more:

- per process: the run's `cpu_by_process` (every process tree from /proc) and PostgreSQL's split by process
  (BackendSampler), as milliseconds a page;
- per statement: pg_stat_statements' execution time of each statement of our database over the crawl (the
  private cluster loads it), the top ones by time, with their calls and rows a page (`statement_times`);
- per Python function: each of our processes (workers and their pool children, beat, the crawl command)
  profiles itself while the benchmark's flag file is there (crawladmin.profiling, PROFILE_DIR): the top
  functions by cumulative and by own CPU time a page (`function_times`).

Kept in the run's figures under "profile" (--json), so a later change is paired against it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

TOP_STATEMENTS = 15
TOP_FUNCTIONS = 20


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


def _process_name(profile: dict, names: dict[int, str]) -> str | None:
    """Whose profile this is: a watched process or a child of one (a prefork pool's, the parse's: it counts with
    its worker, as in cpu_by_process), or the crawl command and its children."""
    for pid in (profile["pid"], profile.get("origin"), profile["ppid"]):
        if pid in names:
            return names[pid]
    if "crawl" in profile["argv"]:
        return "crawl command"
    return None  # a process outside the crawl's span (migrate)


def function_times(directory: Path, names: dict[int, str], pages: int, *, n: int = TOP_FUNCTIONS) -> dict:
    """Each process's profile (crawladmin.profiling) under `directory`, merged by process name: the CPU seconds
    it saw, the profiler's own, and the top `n` functions by cumulative and by own time, milliseconds a page."""
    merged: dict[str, dict] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            profile = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        name = _process_name(profile, names)
        if name is None or not profile["samples"]:
            continue
        into = merged.setdefault(
            name,
            {"cpu_s": 0.0, "before_wait_s": 0.0, "sampler_cpu_s": 0.0, "processes": 0}
            | {"own": Counter(), "cumulative": Counter()},
        )
        into["cpu_s"] += profile["cpu_s"]
        into["before_wait_s"] += profile.get("before_wait_s", 0.0)
        into["sampler_cpu_s"] += profile["sampler_cpu_s"]
        into["processes"] += 1
        into["own"].update(profile["own"])
        into["cumulative"].update(profile["cumulative"])
    per = max(pages, 1) / 1000  # seconds to milliseconds a page
    return {
        name: {
            "cpu_ms_per_page": round(m["cpu_s"] / per, 4),
            "before_wait_ms_per_page": round(m["before_wait_s"] / per, 4),
            "sampler_ms_per_page": round(m["sampler_cpu_s"] / per, 4),
            "processes": m["processes"],
            **{
                order: [[key, round(s / per, 4)] for key, s in m[order].most_common(n)]
                for order in ("cumulative", "own")
            },
        }
        for name, m in merged.items()
    }


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
    for name, f in profile["functions"].items():
        print(
            f"   {name}: {f['cpu_ms_per_page']:.3f} ms a page sampled in {f['processes']} process(es), "
            f"{f['before_wait_ms_per_page']:.3f} of it before a wait ('waiting: …': callers known, function not); "
            f"the profiler's own {f['sampler_ms_per_page']:.3f}; top functions, cumulative | own:"
        )
        for (ck, cv), (ok, ov) in zip(f["cumulative"], f["own"], strict=False):
            print(f"      {cv:7.3f} {ck[:62]:<62} | {ov:7.3f} {ok[:62]}")
