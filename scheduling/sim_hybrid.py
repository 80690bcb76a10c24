"""Seed 000's experiment: how many hours R robots need to collect every server, under Random, Sorting
and Hybrid-Sorting (the paper, ~100 servers and 4 robots: 26 h, 21 h, 19 h).

The model, as the paper describes it (§2.1, §3 steps 4–5, §4):

* ~100 servers, each with a random capacity (pages to collect) and a 24-hour load profile of one of the
  paper's four shapes (그림 3): low all day, high all day, one deep valley, mixed (a day/night swing).
* A robot on server i in hour h collects `rate(load_i(h))` pages per hour: fast when the server is idle,
  slow when it is loaded. The robots' own load on the server is ignored (as in the paper).
* Each hour the wait queue is reset and refilled from the policy's column for that hour, skipping
  servers already finished, being collected, or paused; an idle robot takes the next server from it.
* At each hour boundary, Hybrid-Sorting's pause rule may stop a robot's unfinished server (its progress
  is kept, the checkpoint) until a less-loaded hour; the robot then takes the next server in the queue.
  Until that hour the paused server stands behind all others in the queue: it is taken only by a robot
  that would otherwise idle. (A strict pause that idles robots finishes later than no pause at all once
  the lookahead passes a few hours: the last servers wait while robots stand still.)

The policy objects are scheduling.hybrid_sorting' — the same ones the dispatcher builds from real profiles.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import deque
from dataclasses import asdict, dataclass, field, replace

from .hybrid_sorting import HOURS, POLICIES, ServerOrder, policy_build

SHAPES = ("low", "high", "valley", "mixed")


@dataclass(frozen=True)
class Config:
    servers: int = 100
    robots: int = 4
    start_hour: int = 0
    max_rate: float = 1000.0  # pages per hour a robot collects from an idle server
    min_capacity: float = 50.0  # pages per server, uniformly random in [min, max]
    max_capacity: float = 750.0
    pause_lookahead: int = 1  # Hybrid-Sorting's pause rule: the paper's, the hour after the coming one
    pause_margin: float = 0.0
    max_hours: int = 24 * 14


@dataclass(frozen=True)
class SimServer:
    id: int
    shape: str
    capacity: float
    profile: tuple[float, ...]  # load fraction 0..1 per hour of day


@dataclass
class Run:
    policy: str
    hours: float  # when the last server was finished
    per_hour: list[float] = field(default_factory=list)  # pages collected in each hour of the run
    pauses: int = 0

    @property
    def whole_hours(self) -> int:
        """Hours started until the end, as the paper counts them (19 h: finished within the 19th hour)."""
        return math.ceil(self.hours - 1e-9)


def rate(cfg: Config, load: float) -> float:
    """Pages per hour from a server at this load: falls steeply as the server gets busy (a tenth at full load)."""
    return cfg.max_rate * (1.0 - 0.9 * min(max(load, 0.0), 1.0))


def _clip(x: float) -> float:
    return min(0.98, max(0.02, x))


def load_profile_make(shape: str, rng: random.Random) -> tuple[float, ...]:
    """A 24-hour load profile (fractions 0..1) of one of the paper's four shapes."""
    noise = [rng.uniform(-0.05, 0.05) for _ in range(HOURS)]
    if shape == "low":
        base = rng.uniform(0.05, 0.3)
        return tuple(_clip(base + n) for n in noise)
    if shape == "high":
        base = rng.uniform(0.6, 0.9)
        return tuple(_clip(base + n) for n in noise)
    if shape == "valley":
        base, floor = rng.uniform(0.6, 0.9), rng.uniform(0.03, 0.15)
        centre, width = rng.randrange(HOURS), rng.uniform(1.0, 2.5)
        out = []
        for h in range(HOURS):
            d = min((h - centre) % HOURS, (centre - h) % HOURS)
            depth = math.exp(-((d / width) ** 2))  # 1 at the valley's centre, ~0 a few hours away
            out.append(_clip(base - (base - floor) * depth + noise[h]))
        return tuple(out)
    # mixed: busy in the day, quiet at night, with its own peak hour and swing
    mean, swing, peak = rng.uniform(0.3, 0.6), rng.uniform(0.15, 0.35), rng.uniform(10, 16)
    return tuple(_clip(mean + swing * math.cos(2 * math.pi * (h - peak) / HOURS) + noise[h]) for h in range(HOURS))


def servers_make(cfg: Config, seed: int) -> list[SimServer]:
    """The server list, in the order it was "written" (Random's order): shapes in equal shares, shuffled."""
    rng = random.Random(seed)
    shapes = [SHAPES[i % len(SHAPES)] for i in range(cfg.servers)]
    rng.shuffle(shapes)
    return [
        SimServer(i, shape, rng.uniform(cfg.min_capacity, cfg.max_capacity), load_profile_make(shape, rng))
        for i, shape in enumerate(shapes)
    ]


def simulate(cfg: Config, servers: list[SimServer], policy: ServerOrder[int]) -> Run:
    remaining = {s.id: s.capacity for s in servers}
    load = {s.id: s.profile for s in servers}
    paused_until: dict[int, int] = {}  # server -> run hour from which it may be sent again
    robots: list[int | None] = [None] * cfg.robots
    run = Run(policy.name, hours=float("inf"))
    for step in range(cfg.max_hours):
        hour = (cfg.start_hour + step) % HOURS
        # Step 5: a robot's unfinished server stops at the boundary when a later hour is better for it.
        for r, s in enumerate(robots):
            if s is not None and (wait := policy.pause(s, hour)):
                paused_until[s] = step + wait
                robots[r] = None
                run.pauses += 1
        # Step 4: the wait queue is reset and refilled from this hour's column.
        busy = {s for s in robots if s is not None}
        unfinished = [s.id for s in servers if remaining[s.id] > 0]
        # A paused server waits behind every other one: a robot takes it only when nothing else is left,
        # rather than idle (the dispatcher releases one when the load queue runs dry).
        ordered = [s for s in policy.order(hour, unfinished) if s not in busy]
        waiting = [s for s in ordered if paused_until.get(s, 0) > step]
        queue = deque([s for s in ordered if paused_until.get(s, 0) <= step] + waiting)
        used = [0.0] * cfg.robots  # fraction of this hour each robot has spent
        collected = 0.0
        finished_at = 0.0
        while True:
            r = min((i for i in range(cfg.robots) if used[i] < 1.0), key=used.__getitem__, default=None)
            if r is None:
                break
            if robots[r] is None:
                if not queue:
                    used[r] = 1.0  # nothing to do: idle for the rest of the hour
                    continue
                robots[r] = queue.popleft()
            s = robots[r]
            speed = rate(cfg, load[s][hour])
            need = remaining[s] / speed
            if used[r] + need <= 1.0:
                used[r] += need
                collected += remaining[s]
                remaining[s] = 0.0
                robots[r] = None
                finished_at = max(finished_at, used[r])
            else:
                got = speed * (1.0 - used[r])
                collected += got
                remaining[s] -= got
                used[r] = 1.0
        run.per_hour.append(collected)
        if all(v <= 0 for v in remaining.values()):
            run.hours = step + finished_at
            return run
    return run


def compare(cfg: Config, seed: int) -> dict[str, Run]:
    """The three policies on the same servers (one seed)."""
    servers = servers_make(cfg, seed)
    profiles = {s.id: s.profile for s in servers}
    listing = [s.id for s in servers]
    out = {}
    for name in POLICIES:
        policy = policy_build(
            name, profiles, listing, pause_lookahead=cfg.pause_lookahead, pause_margin=cfg.pause_margin
        )
        out[name] = simulate(cfg, servers, policy)
    return out


PAPER_HOURS = {"random": 26, "sorting": 21, "hybrid": 19}


def experiment(cfg: Config, seeds_n: int) -> dict:
    """The paper's comparison over random seeds 0 … seeds_n−1: hours to finish per policy and seed, their
    means and ratios beside the paper's, and the pages collected per hour (its figure 5). JSON-ready."""
    seeds = []
    hours: dict[str, list[float]] = {p: [] for p in POLICIES}  # unrounded: the same means as scaling()'s
    for seed in range(seeds_n):
        runs = compare(cfg, seed)
        for p in POLICIES:
            hours[p].append(runs[p].hours)
        seeds.append(
            {
                "seed": seed,
                "hours": {p: round(r.hours, 2) for p, r in runs.items()},
                "whole_hours": {p: r.whole_hours for p, r in runs.items()},
                "pauses": runs["hybrid"].pauses,
                "per_hour": {p: [round(v, 1) for v in r.per_hour] for p, r in runs.items()},
            }
        )
    mean = {p: statistics.mean(hours[p]) for p in POLICIES}
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
        "cumulative_mean": cumulative_mean(seeds),
    }


SCALING_SERVERS = (50, 100, 200, 400)


def cumulative(per_hour: list[float]) -> list[float]:
    """Pages collected by the end of each hour (the paper's figure 5 plots these)."""
    out, total = [], 0.0
    for v in per_hour:
        total += v
        out.append(total)
    return out


def cumulative_mean(seeds: list[dict]) -> dict[str, list[float]]:
    """Per policy, the mean over seeds of the cumulative pages by the end of each hour (a finished run
    keeps its total)."""
    out = {}
    for p in POLICIES:
        curves = [cumulative(s["per_hour"][p]) for s in seeds]
        hours = max(len(c) for c in curves)
        out[p] = [round(statistics.mean(c[min(h, len(c) - 1)] for c in curves), 1) for h in range(hours)]
    return out


def scaling(cfg: Config, seeds_n: int, sizes: tuple[int, ...] = SCALING_SERVERS) -> dict:
    """Hours to finish per policy for each number of servers (the robots and everything else as `cfg`):
    does Hybrid's lead grow with the number of servers, as the paper's conclusion says?"""
    rows = {}
    for n in sizes:
        sized = replace(cfg, servers=n)
        runs = [compare(sized, seed) for seed in range(seeds_n)]
        mean = {p: statistics.mean(r[p].hours for r in runs) for p in POLICIES}
        rows[str(n)] = {
            "mean_hours": {p: round(v, 2) for p, v in mean.items()},
            "sorting/hybrid": round(mean["sorting"] / mean["hybrid"], 3),
            "random/hybrid": round(mean["random"] / mean["hybrid"], 3),
        }
    return rows
