"""Benchmark: `manage.py import_servers` of a 100,000-line server list. Prints figures; asserts
nothing.

    python -m bench.import_servers                      # 100,000 lines, embedded SQLite
    python -m bench.import_servers --lines 20000 --pg   # a fresh PostgreSQL database (CRAWLADMIN_TEST_PG)

Writes a list of distinct servers (every column used, one line in a hundred bad), migrates a fresh database,
then times the import twice: into the empty database (every server new) and again (every server known, the
idempotent path). Prints lines per second and the peak RSS of the importing process (its own, from
wait4(), not the benchmark's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

from bench.harness.db import ROOT, fresh_database


def server_list(path: Path, lines: int) -> int:
    """`lines` rows of distinct servers; every hundredth is bad. Returns the count of bad rows."""
    bad = 0
    with path.open("w", encoding="utf-8") as f:
        f.write("host_or_url,group,crawler_num,interval,delay_threshold,accepted_codes\n")
        for i in range(lines):
            if i % 100 == 99:
                f.write(f"host{i}.example.org,faculty,²,,,\n")  # a crawler number no int() takes
                bad += 1
                continue
            a, b = divmod(i, 250)
            scheme = "https" if i % 3 else "http"
            f.write(f"{scheme}://s{a}-{b}.example.org/health,group{i % 40},{i % 8},{60 + i % 600},2.5,200-399\n")
    return bad


def run(env: dict[str, str], *args: str) -> tuple[float, int, subprocess.CompletedProcess]:
    """Seconds and peak RSS (KiB) of one `manage.py` run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate()
    # communicate() has reaped the child; its rusage is in RUSAGE_CHILDREN only as a maximum over all
    # children, so each run is measured in a process of its own (see main).
    seconds = time.perf_counter() - t0
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    import resource

    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done


def one_run(env: dict[str, str], csv_path: str) -> dict:
    """Run the import in a fresh child of a fresh Python, so RUSAGE_CHILDREN holds that import alone."""
    code = (
        "import json, sys; from bench.import_servers import run; "
        "s, rss, p = run(json.loads(sys.argv[1]), 'import_servers', '--trusted', '--json', sys.argv[2]); "
        "print(json.dumps({'seconds': s, 'rss_kib': rss, 'rc': p.returncode, "
        "'out': p.stdout, 'err': p.stderr[-2000:]}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(env), csv_path], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--pg", action="store_true", help="a fresh PostgreSQL database instead of SQLite")
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="bench-import-") as tmp,
        fresh_database("import") if args.pg else nullcontext(None) as pg_url,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
        env["CRAWLADMIN_DATA_DIR"] = tmp
        if pg_url:
            env.update(DATABASE_URL=pg_url, DJANGO_SECRET_KEY="bench-key-" * 5, DJANGO_SECURE="false")
        csv_path = Path(tmp) / "servers.csv"
        bad = server_list(csv_path, args.lines)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        print(f"import_servers: {args.lines:,} lines ({bad:,} bad), {'PostgreSQL' if pg_url else 'SQLite'}")
        for label in ("new servers", "again (all known)"):
            r = one_run(env, str(csv_path))
            if r["rc"] not in (0, 1):
                print(f"  {label}: failed (exit {r['rc']}):\n{r['err']}")
                sys.exit(1)
            summary = json.loads(r["out"])
            print(
                f"  {label:18} {r['seconds']:6.1f} s  {args.lines / r['seconds']:8,.0f} lines/s  "
                f"peak RSS {r['rss_kib'] / 1024:5.0f} MB  "
                f"(imported {summary['imported']:,}: {summary['created']:,} new, {summary['updated']:,} updated; "
                f"{len(summary['bad']):,} bad)"
            )


if __name__ == "__main__":
    main()
