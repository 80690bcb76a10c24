"""Reproduce the scheduling papers' experiments with the scheduler code the crawler runs.

    python manage.py simulate hybrid    [--seeds N] [--servers 100] [--robots 4] [--json] [--plot out.png]
    python manage.py simulate staleness [--seeds N] [--pages 4500] [--threads 4] [--json] [--plot out.png]

hybrid: seed 000 (Random / Sorting / Hybrid-Sorting; the paper: 26 h, 21 h, 19 h), scheduling.sim_hybrid.
staleness: seed 004 (mean staleness 235.4 vs 526.5 vs 897.7 min), scheduling.sim_staleness.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

from django.core.management.base import BaseCommand, CommandError

from scheduling import sim_hybrid, sim_staleness
from scheduling.plots import plot_hybrid, plot_staleness


class Command(BaseCommand):
    help = "Simulate seed 000 (hybrid) or seed 004 (staleness) with the crawler's own scheduling code."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "experiment",
            choices=["hybrid", "staleness"],
            help="which paper's simulation: hybrid (seed 000) or staleness (seed 004)",
        )
        parser.add_argument("--seeds", type=int, default=5, help="random seeds 0..N-1 (default 5)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")
        parser.add_argument("--plot", metavar="PNG", help="write a figure (matplotlib, Agg)")
        parser.add_argument("--servers", type=int, help="hybrid: servers (100)")
        parser.add_argument("--robots", type=int, help="hybrid: robots (4)")
        parser.add_argument(
            "--pause-lookahead", type=int, help="hybrid: hours looked ahead by the pause rule (1: the paper's)"
        )
        parser.add_argument("--pages", type=int, help="staleness: pages (4500)")
        parser.add_argument("--threads", type=int, help="staleness: fetch threads m (4)")

    def handle(self, *args, **opts) -> None:
        if not 1 <= opts["seeds"] <= 1000:
            raise CommandError("--seeds must be within 1-1000")
        if opts["experiment"] == "hybrid":
            result = self._hybrid(opts)
        else:
            result = self._staleness(opts)
        if opts["plot"]:
            (plot_hybrid if opts["experiment"] == "hybrid" else plot_staleness)(result, opts["plot"])
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2))
        else:
            (self._print_hybrid if opts["experiment"] == "hybrid" else self._print_staleness)(result)
        if opts["plot"] and not opts["json"]:
            self.stdout.write(f"figure: {opts['plot']}")

    # ---------------------------------------------------------------------------------------------- seed 000

    def _hybrid(self, opts) -> dict:
        changes = {k: opts[k] for k in ("servers", "robots", "pause_lookahead") if opts[k] is not None}
        cfg = replace(sim_hybrid.Config(), **changes)
        if cfg.servers < 1 or cfg.robots < 1:
            raise CommandError("--servers and --robots must be at least 1")
        result = sim_hybrid.experiment(cfg, opts["seeds"])
        result["scaling"] = sim_hybrid.scaling(cfg, opts["seeds"])
        return result

    def _print_hybrid(self, r: dict) -> None:
        cfg = r["config"]
        w = self.stdout.write
        w(
            f"{r['experiment']}: {cfg['servers']} servers, {cfg['robots']} robots, "
            f"pause lookahead {cfg['pause_lookahead']} h (margin {cfg['pause_margin']:.0%})"
        )
        w("hours to collect every server")
        w(f"{'seed':>6} {'Random':>8} {'Sorting':>8} {'Hybrid':>8}")
        for s in r["seeds"]:
            h = s["hours"]
            w(f"{s['seed']:>6} {h['random']:>8.2f} {h['sorting']:>8.2f} {h['hybrid']:>8.2f}")
        m, p = r["mean_hours"], r["paper_hours"]
        w(f"{'mean':>6} {m['random']:>8.2f} {m['sorting']:>8.2f} {m['hybrid']:>8.2f}")
        w(f"{'paper':>6} {p['random']:>8} {p['sorting']:>8} {p['hybrid']:>8}")
        w("ratios (paper): " + ", ".join(f"{k} {v:.2f} ({r['paper_ratios'][k]:.2f})" for k, v in r["ratios"].items()))
        n = len(r["seeds"])
        w(f"Hybrid < Sorting < Random in {r['ordering_held']} of {n} seeds")
        cum = r["cumulative_mean"]
        w(f"cumulative pages collected by the end of each hour, mean of {n} seeds (the paper's figure 5):")
        w(f"{'hour':>6} {'Random':>9} {'Sorting':>9} {'Hybrid':>9}   Hybrid - Sorting")
        for i in range(max(len(v) for v in cum.values())):
            row = [cum[p][min(i, len(cum[p]) - 1)] for p in sim_hybrid.POLICIES]
            w(f"{i + 1:>6} " + " ".join(f"{v:>9.0f}" for v in row) + f"   {row[2] - row[1]:>+8.0f}")
        w("hours to finish by number of servers (same robots; mean of the seeds):")
        w(f"{'servers':>8} {'Random':>8} {'Sorting':>8} {'Hybrid':>8} {'Sorting/Hybrid':>15} {'Random/Hybrid':>14}")
        for servers, row in r["scaling"].items():
            m = row["mean_hours"]
            w(
                f"{servers:>8} {m['random']:>8.2f} {m['sorting']:>8.2f} {m['hybrid']:>8.2f} "
                f"{row['sorting/hybrid']:>15.3f} {row['random/hybrid']:>14.3f}"
            )

    # ---------------------------------------------------------------------------------------------- seed 004

    def _staleness(self, opts) -> dict:
        changes = {k: opts[k] for k in ("pages", "threads") if opts[k] is not None}
        cfg = replace(sim_staleness.Config(), **changes)
        if cfg.pages < 1 or cfg.threads < 1:
            raise CommandError("--pages and --threads must be at least 1")
        return sim_staleness.experiment(cfg, opts["seeds"])

    def _print_staleness(self, r: dict) -> None:
        cfg = r["config"]
        w = self.stdout.write
        w(
            f"{r['experiment']}: {cfg['pages']} pages on {cfg['servers']} servers, m = {cfg['threads']} threads, "
            f"{cfg['periods']} periods of {cfg['period_minutes']:g} min"
        )
        names = sim_staleness.POLICIES
        w("mean staleness, minutes")
        w(f"{'seed':>6} " + " ".join(f"{n:>17}" for n in names))
        for s in r["seeds"]:
            w(f"{s['seed']:>6} " + " ".join(f"{s['mean_minutes'][n]:>17.1f}" for n in names))
        w(f"{'mean':>6} " + " ".join(f"{r['mean_minutes'][n]:>17.1f}" for n in names))
        paper = r["paper_minutes"]
        w(f"{'paper':>6} " + " ".join(f"{paper[n]:>17.1f}" if n in paper else f"{'-':>17}" for n in names))
        w(
            "times ours (paper): "
            + ", ".join(
                f"{k} {v:.2f}" + (f" ({r['paper_ratios'][k]:.2f})" if k in r["paper_ratios"] else "")
                for k, v in r["ratios_to_ours"].items()
            )
        )
        fetched = {n: statistics.mean(s["fetched"][n] for s in r["seeds"]) for n in names}
        w("pages fetched per run: " + ", ".join(f"{n} {v:.0f}" for n, v in fetched.items()))
        w(f"ours below both baselines in {r['ours_best_in']} of {len(r['seeds'])} seeds")
