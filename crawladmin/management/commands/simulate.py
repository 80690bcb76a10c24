"""Reproduce the scheduling papers' experiments with the scheduler code the crawler runs.

    python manage.py simulate hybrid    [--seeds N] [--servers 100] [--robots 4] [--json] [--plot out.png]
    python manage.py simulate staleness [--seeds N] [--pages 4500] [--threads 4] [--json] [--plot out.png]

hybrid: seed 000 (Random / Sorting / Hybrid-Sorting; the paper: 26 h, 21 h, 19 h), scheduling.sim_hybrid.
staleness: seed 004 (mean staleness 235.4 vs 526.5 vs 897.7 min), scheduling.sim_staleness.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, replace

from django.core.management.base import BaseCommand, CommandError

from scheduling import sim_hybrid, sim_staleness

PAPER_HOURS = {"random": 26, "sorting": 21, "hybrid": 19}
PAPER_STALENESS = {"ours": 235.4, "change-frequency": 526.5, "importance": 897.7}
LABELS = {
    "random": "Random",
    "sorting": "Sorting",
    "hybrid": "Hybrid-Sorting",
    "ours": "ours: (T-t)s - pg",
    "change-frequency": "change frequency (Tan 2010)",
    "importance": "importance (Khan 2013)",
    "round-robin": "round robin, oldest first",
}


SHORT = {
    "ours": "ours\n(T-t)s - pg",
    "change-frequency": "change frequency\n(Tan 2010)",
    "importance": "importance\n(Khan 2013)",
    "round-robin": "round robin\n(oldest first)",
}


class Command(BaseCommand):
    help = "Simulate seed 000 (hybrid) or seed 004 (staleness) with the crawler's own scheduling code."

    def add_arguments(self, parser) -> None:
        parser.add_argument("experiment", choices=["hybrid", "staleness"])
        parser.add_argument("--seeds", type=int, default=5, help="random seeds 0..N-1 (default 5)")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--plot", metavar="PNG", help="write a figure (matplotlib, Agg)")
        parser.add_argument("--servers", type=int, help="hybrid: servers (100)")
        parser.add_argument("--robots", type=int, help="hybrid: robots (4)")
        parser.add_argument("--pause-lookahead", type=int, help="hybrid: hours looked ahead by the pause rule (3)")
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
        seeds = []
        for seed in range(opts["seeds"]):
            runs = sim_hybrid.compare(cfg, seed)
            seeds.append(
                {
                    "seed": seed,
                    "hours": {p: round(r.hours, 2) for p, r in runs.items()},
                    "whole_hours": {p: r.whole_hours for p, r in runs.items()},
                    "pauses": runs["hybrid"].pauses,
                    "per_hour": {p: [round(v, 1) for v in r.per_hour] for p, r in runs.items()},
                }
            )
        mean = {p: statistics.mean(s["hours"][p] for s in seeds) for p in sim_hybrid.POLICIES}
        return {
            "experiment": "seed 000: Random / Sorting / Hybrid-Sorting robot scheduling",
            "config": asdict(cfg),
            "seeds": seeds,
            "mean_hours": {p: round(v, 2) for p, v in mean.items()},
            "ratios": {
                "random/hybrid": round(mean["random"] / mean["hybrid"], 3),
                "sorting/hybrid": round(mean["sorting"] / mean["hybrid"], 3),
                "random/sorting": round(mean["random"] / mean["sorting"], 3),
            },
            "paper_hours": PAPER_HOURS,
            "paper_ratios": {"random/hybrid": 1.368, "sorting/hybrid": 1.105, "random/sorting": 1.238},
            "ordering_held": sum(s["hours"]["hybrid"] < s["hours"]["sorting"] < s["hours"]["random"] for s in seeds),
        }

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
        first = r["seeds"][0]["per_hour"]
        w("pages collected per hour, seed 0 (the paper's figure 5):")
        w(f"{'hour':>6} {'Random':>8} {'Sorting':>8} {'Hybrid':>8}")
        for i in range(max(len(v) for v in first.values())):
            cells = [f"{v[i]:>8.0f}" if i < len(v) else f"{'':>8}" for v in (first[p] for p in sim_hybrid.POLICIES)]
            w(f"{i + 1:>6} " + " ".join(cells))

    # ---------------------------------------------------------------------------------------------- seed 004

    def _staleness(self, opts) -> dict:
        changes = {k: opts[k] for k in ("pages", "threads") if opts[k] is not None}
        cfg = replace(sim_staleness.Config(), **changes)
        if cfg.pages < 1 or cfg.threads < 1:
            raise CommandError("--pages and --threads must be at least 1")
        seeds = []
        for seed in range(opts["seeds"]):
            runs = sim_staleness.compare(cfg, seed)
            seeds.append(
                {
                    "seed": seed,
                    "mean_minutes": {p: round(r.mean_minutes, 1) for p, r in runs.items()},
                    "fetched": {p: r.fetched for p, r in runs.items()},
                    "per_period": {p: [round(v, 1) for v in r.per_period] for p, r in runs.items()},
                }
            )
        mean = {p: statistics.mean(s["mean_minutes"][p] for s in seeds) for p in sim_staleness.POLICIES}
        return {
            "experiment": "seed 004: staleness-optimal recrawl",
            "config": asdict(cfg),
            "seeds": seeds,
            "mean_minutes": {p: round(v, 1) for p, v in mean.items()},
            "ratios_to_ours": {p: round(mean[p] / mean["ours"], 3) for p in sim_staleness.POLICIES if p != "ours"},
            "paper_minutes": PAPER_STALENESS,
            "paper_ratios": {"change-frequency": 2.24, "importance": 3.81},
            "ours_best_in": sum(
                all(s["mean_minutes"]["ours"] < s["mean_minutes"][b] for b in sim_staleness.BASELINES) for s in seeds
            ),
        }

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


# -------------------------------------------------------------------------------------------------- plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_hybrid(r: dict, path: str) -> None:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), constrained_layout=True)
    first = r["seeds"][0]
    for p in sim_hybrid.POLICIES:
        curve = first["per_hour"][p]
        left.plot(
            range(1, len(curve) + 1), curve, marker="o", markersize=3, label=f"{LABELS[p]}: {first['hours'][p]:.1f} h"
        )
    left.set_title("Pages collected per hour (seed 0)")
    left.set_xlabel("hour of the run")
    left.set_ylabel("pages collected in that hour")
    left.grid(alpha=0.3)
    left.legend()
    seeds = [s["seed"] for s in r["seeds"]]
    width = 0.8 / 3
    for i, p in enumerate(sim_hybrid.POLICIES):
        right.bar(
            [x + (i - 1) * width for x in seeds],
            [s["hours"][p] for s in r["seeds"]],
            width,
            label=f"{LABELS[p]} (mean {r['mean_hours'][p]:.1f} h, paper {r['paper_hours'][p]} h)",
        )
    right.set_title(f"Hours to collect all {r['config']['servers']} servers with {r['config']['robots']} robots")
    right.set_xlabel("random seed")
    right.set_ylabel("hours to finish")
    right.set_xticks(seeds)
    right.grid(axis="y", alpha=0.3)
    right.legend(loc="lower right")
    fig.suptitle("Seed 000: Random vs Sorting vs Hybrid-Sorting server order")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_staleness(r: dict, path: str) -> None:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), constrained_layout=True)
    first = r["seeds"][0]
    minutes = r["config"]["period_minutes"]
    for p in sim_staleness.POLICIES:
        curve = first["per_period"][p]
        left.plot(
            [i * minutes / 60 for i in range(len(curve))],
            curve,
            label=f"{LABELS[p]}: {first['mean_minutes'][p]:.0f} min",
        )
    left.set_title("Mean staleness of the collection over the day (seed 0)")
    left.set_xlabel("hours since start")
    left.set_ylabel("mean page staleness (minutes)")
    left.grid(alpha=0.3)
    left.legend()
    names = list(sim_staleness.POLICIES)
    ours = [r["mean_minutes"][n] for n in names]
    paper = [r["paper_minutes"].get(n, 0.0) for n in names]
    xs = range(len(names))
    right.bar([x - 0.2 for x in xs], ours, 0.4, label=f"simulated, mean of {len(r['seeds'])} seeds")
    right.bar([x + 0.2 for x in xs], paper, 0.4, label="paper (no round robin there)")
    for x, v in zip(xs, ours, strict=True):
        right.annotate(f"{v:.0f}", (x - 0.2, v), ha="center", va="bottom", fontsize=8)
    right.set_xticks(list(xs), [SHORT[n] for n in names], fontsize=9)
    right.set_title("Mean page staleness by policy")
    right.set_ylabel("minutes")
    right.grid(axis="y", alpha=0.3)
    right.legend()
    fig.suptitle("Seed 004: staleness-optimal recrawl against change-frequency and importance baselines")
    fig.savefig(path, dpi=120)
    plt.close(fig)
