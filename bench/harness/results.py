"""A benchmark's raw output, kept: one JSON file under bench/results/ per run of a benchmark command.

Every file holds the commit it ran at, the machine (cores, RAM, kernel), the load average before and after,
the command's arguments and every figure it printed, so a figure in a document traces to a file and the
file to a command. ``--out PATH`` chooses the file; the default name is ``<bench>-<date>-<commit>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "bench" / "results"

__all__ = ["RESULTS", "add_out_option", "commit", "loadavg", "machine", "out_path", "write_results"]


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def commit() -> str:
    """The commit checked out, with "-dirty" when the work tree differs from it ("unknown" outside git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("-dirty" if dirty else "")


def machine() -> dict:
    """Cores, RAM, kernel and Python of this machine."""
    ram = 0
    try:
        with open("/proc/meminfo") as f:
            ram = next((int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:")), 0)
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "ram_bytes": ram,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def add_out_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="where to write the raw output as JSON (default: bench/results/<bench>-<date>-<commit>.json)",
    )


def out_path(bench: str, out: str | None) -> Path:
    if out:
        return Path(out)
    stem = f"{bench}-{datetime.now(UTC).strftime('%Y-%m-%dT%H%M%S')}-{commit()}"
    path, n = RESULTS / f"{stem}.json", 2
    while path.exists():  # runs of one second: each keeps its own file
        path, n = RESULTS / f"{stem}-{n}.json", n + 1
    return path


def _jsonable(value: object) -> object:
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def write_results(
    bench: str,
    args: argparse.Namespace | dict,
    figures: dict,
    *,
    load_before: list[float],
    load_after: list[float] | None = None,
    out: str | None = None,
) -> Path:
    """Write one run of a benchmark as JSON; returns the path (also said on stderr)."""
    path = out_path(bench, out)
    arguments = dict(vars(args)) if isinstance(args, argparse.Namespace) else dict(args)
    arguments.pop("out", None)
    doc = {
        "bench": bench,
        "command": "python -m bench." + bench + " " + " ".join(sys.argv[1:]),
        "commit": commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_after if load_after is not None else loadavg(),
        "arguments": arguments,
        "figures": figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(doc), indent=1, sort_keys=False) + "\n")
    sys.stdout.flush()
    print(f"raw output: {path}", file=sys.stderr)
    return path
