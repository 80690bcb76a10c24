"""Figures of the two scheduling experiments (scheduling.sim_hybrid.experiment, sim_staleness.experiment),
drawn with matplotlib's Agg backend; matplotlib is imported only when a figure is asked for."""

from __future__ import annotations

from . import sim_hybrid, sim_staleness

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
