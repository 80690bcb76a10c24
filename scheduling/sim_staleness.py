"""Seed 004's experiment: mean page staleness (minutes) under the staleness-optimal recrawl schedule and
under baselines (the paper: 235.4 min against 526.5 and 897.7 min for its two predecessors).

The model:

* pages of random sizes (log-normal, KB) spread over a few servers; each server has an hourly
  response-time profile g_i(h) (seconds per KB; the four load shapes of seed 000 scale it up to 5×);
* time runs in periods of fixed length; m fetch threads each have one period of time per period, and
  fetching page j from server i in hour h occupies a thread for p_j·g_i(h) seconds, so what a policy
  picks decides how many pages fit: the threads take pages in the policy's order, each page going to
  the thread free first, skipping a page that no longer fits in the period;
* s_j(t): periods since page j was fetched (eq. 1); staleness is reported as s·(period length) in
  minutes, averaged over pages and over the periods t = 0..T.

Policies, each an ordering of all pages at the start of a period:

* **ours** — descending (T − t)·s_j(t) − p_j·g_i(t), scheduling.staleness_score.score, the expression the
  active-scan sweep evaluates in the database;
* **change-frequency** (Tan et al. 2010) — pages that change more are revisited more: descending
  λ̂_j·s_j, λ̂_j the page's change rate as a crawler knows it: estimated from what its fetches saw (each
  fetch finds a change with probability 1 − e^(−λ_j·Δ), Δ the time since the last one; the estimator of
  scheduling.freshness.change_rate with a prior of one change a day), not the true λ_j (log-uniform, once an
  hour to once a week), which no crawler has;
* **importance** (Khan et al. 2013) — important pages are revisited more: descending w_j·s_j, w_j a
  Zipf-like importance;
* **round-robin** — plain oldest first, descending s_j; ignores cost (a third reference).

Ties go to the smaller page id in every policy, as in the database query.
"""

from __future__ import annotations

import heapq
import random
import statistics
from dataclasses import asdict, dataclass, field

import numpy as np

from .sim_hybrid import SHAPES, load_profile_make
from .staleness_score import score

POLICIES = ("ours", "change-frequency", "importance", "round-robin")
BASELINES = ("change-frequency", "importance")  # the paper's two predecessors


@dataclass(frozen=True)
class Config:
    servers: int = 10  # the paper tried its scheduler on 10 sites
    pages: int = 4500
    threads: int = 4  # m
    period_minutes: float = 10.0
    periods: int = 144  # T: one day of 10-minute periods
    median_kb: float = 20.0
    size_sigma: float = 1.0
    max_kb: float = 2000.0
    start_hour: int = 0
    initial_max_age: int = 48  # s_j(0) uniform in [0, this] periods
    max_skips: int = 200  # a thread stops looking after this many pages in a row that do not fit


@dataclass
class Corpus:
    server: np.ndarray  # page -> server index
    size: np.ndarray  # KB
    change_rate: np.ndarray  # changes per hour
    importance: np.ndarray
    response: np.ndarray  # [server, hour] seconds per KB
    initial_age: np.ndarray  # periods
    seed: int = 0  # of the changes the fetches see (change-frequency's estimates)


@dataclass
class Run:
    policy: str
    mean_minutes: float
    fetched: int
    per_period: list[float] = field(default_factory=list)  # mean staleness (min) at the start of each period


def corpus_make(cfg: Config, seed: int) -> Corpus:
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    response = np.empty((cfg.servers, 24))
    for i in range(cfg.servers):
        load = np.array(load_profile_make(SHAPES[i % len(SHAPES)], rng))
        response[i] = rng.uniform(0.05, 0.5) * (1.0 + 4.0 * load)  # an idle server 1x, a saturated one 5x
    n = cfg.pages
    size = np.clip(gen.lognormal(np.log(cfg.median_kb), cfg.size_sigma, n), 1.0, cfg.max_kb)
    ranks = gen.permutation(n) + 1
    return Corpus(
        server=gen.integers(0, cfg.servers, n),
        size=size,
        change_rate=np.exp(gen.uniform(np.log(1 / 168), np.log(1.0), n)),
        importance=1.0 / ranks**1.0,  # Zipf
        response=response,
        initial_age=gen.integers(0, cfg.initial_max_age + 1, n),
        seed=seed,
    )


PRIOR_PER_HOUR = 1 / 24  # change-frequency's prior: a change a day until the fetches say otherwise


@dataclass
class Seen:
    """What the fetches saw of each page's changes: fetches, those that found a change, hours watched."""

    checks: np.ndarray
    changed: np.ndarray
    watched: np.ndarray

    @classmethod
    def none(cls, n: int) -> Seen:
        return cls(np.zeros(n), np.zeros(n), np.zeros(n))

    def rates(self) -> np.ndarray:
        """λ̂ per hour: scheduling.freshness.change_rate, term for term, over every page at once."""
        n, x = self.checks, np.minimum(self.changed, self.checks)
        evidence = -np.log((n - x + 0.5) / (n + 0.5)) * n * n
        return (evidence / np.maximum(self.watched, 1.0 / 3600) + PRIOR_PER_HOUR) / (n + 1.0)

    def fetched(self, pages: list[int], hours: np.ndarray, rate: np.ndarray, rng: np.random.Generator) -> None:
        """Fetches of `pages`, `hours` after their previous one: each finds a change with 1 − e^(−λΔ)."""
        if not pages:
            return
        found = rng.random(len(pages)) < -np.expm1(-rate[pages] * hours)
        self.checks[pages] += 1
        self.changed[pages] += found
        self.watched[pages] += hours


def _priority(policy: str, corpus: Corpus, s: np.ndarray, remaining: int, g: np.ndarray, seen: Seen) -> np.ndarray:
    if policy == "ours":
        return score(s, remaining, corpus.size, g)
    if policy == "change-frequency":
        return seen.rates() * s
    if policy == "importance":
        return corpus.importance * s
    if policy == "round-robin":
        return s.astype(float)
    raise ValueError(f"unknown policy {policy!r}")


def _fill(cfg: Config, ranked: np.ndarray, cost: np.ndarray) -> list[int]:
    """Hand pages to the threads in rank order; a page goes to the thread free first, if it fits."""
    budget = cfg.period_minutes * 60.0
    free = [0.0] * cfg.threads  # a heap of the threads' busy time in this period
    taken, skips = [], 0
    for j in ranked:
        c = cost[j]
        if free[0] + c <= budget:
            heapq.heapreplace(free, free[0] + c)
            taken.append(int(j))
            skips = 0
        else:
            skips += 1
            if skips >= cfg.max_skips or free[0] >= budget:
                break
    return taken


def simulate(cfg: Config, corpus: Corpus, policy: str) -> Run:
    s = corpus.initial_age.copy()
    ids = np.arange(len(s))
    run = Run(policy, mean_minutes=0.0, fetched=0)
    total = 0.0
    seen, changes = Seen.none(len(s)), np.random.default_rng(corpus.seed + 1_000_003)
    for t in range(cfg.periods):
        mean_now = float(s.mean()) * cfg.period_minutes
        run.per_period.append(mean_now)
        total += mean_now
        hour = (cfg.start_hour + int(t * cfg.period_minutes // 60)) % 24
        g = corpus.response[corpus.server, hour]
        priority = _priority(policy, corpus, s, cfg.periods - t, g, seen)
        ranked = np.lexsort((ids, -priority))  # descending priority, then ascending id
        fetched = _fill(cfg, ranked, corpus.size * g)
        run.fetched += len(fetched)
        if policy == "change-frequency":
            seen.fetched(fetched, (s[fetched] + 1) * cfg.period_minutes / 60.0, corpus.change_rate, changes)
        s += 1  # eq. 1: every page ages by one period, the fetched ones restart from 0
        s[fetched] = 0
    final = float(s.mean()) * cfg.period_minutes  # t = T, the last term of eq. 2
    run.per_period.append(final)
    run.mean_minutes = (total + final) / (cfg.periods + 1)
    return run


def compare(cfg: Config, seed: int) -> dict[str, Run]:
    corpus = corpus_make(cfg, seed)
    return {name: simulate(cfg, corpus, name) for name in POLICIES}


PAPER_STALENESS = {"ours": 235.4, "change-frequency": 526.5, "importance": 897.7}


def experiment(cfg: Config, seeds_n: int) -> dict:
    """The paper's comparison over random seeds 0 … seeds_n−1: mean staleness (minutes) per policy and seed,
    the means and their ratios to ours beside the paper's, and staleness per period. JSON-ready."""
    seeds = []
    for seed in range(seeds_n):
        runs = compare(cfg, seed)
        seeds.append(
            {
                "seed": seed,
                "mean_minutes": {p: round(r.mean_minutes, 1) for p, r in runs.items()},
                "fetched": {p: r.fetched for p, r in runs.items()},
                "per_period": {p: [round(v, 1) for v in r.per_period] for p, r in runs.items()},
            }
        )
    mean = {p: statistics.mean(s["mean_minutes"][p] for s in seeds) for p in POLICIES}
    return {
        "experiment": "seed 004: staleness-optimal recrawl",
        "config": asdict(cfg),
        "seeds": seeds,
        "mean_minutes": {p: round(v, 1) for p, v in mean.items()},
        "ratios_to_ours": {p: round(mean[p] / mean["ours"], 3) for p in POLICIES if p != "ours"},
        "paper_minutes": PAPER_STALENESS,
        "paper_ratios": {"change-frequency": 2.24, "importance": 3.81},
        "ours_best_in": sum(all(s["mean_minutes"]["ours"] < s["mean_minutes"][b] for b in BASELINES) for s in seeds),
    }
