"""Seeds 000 and 004's simulators with their raw output kept.

    python -m bench.simulate hybrid --seeds 10        # seed 000: hours to finish, Random / Sorting / Hybrid
    python -m bench.simulate staleness --seeds 5      # seed 004: mean staleness per policy, minutes

Runs `manage.py simulate EXPERIMENT --json` with the other arguments as given, prints its JSON, and writes it
under bench/results/ with the commit, the machine and the load average before and after (`--out PATH` to
choose the file). The simulators are deterministic for a seed; the load is kept as for every other figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from bench.harness.results import ROOT, add_out_option, loadavg, write_results

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.simulate", description=__doc__.split("\n\n")[0])
    p.add_argument("experiment", choices=("hybrid", "staleness"))
    add_out_option(p)
    args, rest = p.parse_known_args(argv)  # the rest is manage.py simulate's: --seeds, --servers …
    args.rest = rest
    before = loadavg()
    cmd = [sys.executable, "manage.py", "simulate", args.experiment, *rest, "--json"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"manage.py simulate failed: {tail}", file=sys.stderr)
        return proc.returncode
    figures = json.loads(proc.stdout)
    print(proc.stdout, end="")
    write_results("simulate", args, figures, load_before=before, out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
