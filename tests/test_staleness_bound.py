"""The floor under the live staleness benchmark (scheduling/staleness_bound.py), against a brute force
that simulates fetches on a fine time grid."""

from __future__ import annotations

import itertools
import random

import pytest

from scheduling.staleness_bound import PageTimes, bound_mean_staleness, page_age_by_fetches

STEP = 0.01


def _simulated_age(page: PageTimes, fetches: list[float], *, start: float, end: float) -> float:
    """∫ age over [start, end) by walking a grid: a fetch at f holds the copy live at f, stale from the
    first change after f."""
    fetches = sorted(fetches)
    total, t, since = 0.0, start + STEP / 2, page.stale_since
    i = 0
    while t < end:
        while i < len(fetches) and fetches[i] <= t:
            later = [c for c in page.changes if c > fetches[i]]
            since = later[0] if later else None
            i += 1
        if since is not None and t > since:
            total += (t - since) * STEP
        t += STEP
    return total


def _random_page(rng: random.Random, start: float, end: float) -> PageTimes:
    """A page changing every `interval` from a random phase; the copy held at `start` is either the live
    one (stale from the next change) or an older one (stale since a change before `start`)."""
    interval = rng.uniform(0.7, 6.0)
    first = start + rng.uniform(-interval, 0.0)
    every = [first + k * interval for k in range(-3, 40)]
    before = [c for c in every if c <= start]
    after = [c for c in every if c > start]
    since = rng.choice([after[0], before[-1], before[-2]])
    return PageTimes(since, [c for c in after if c < end])


@pytest.mark.parametrize("seed", range(6))
def test_page_curve_is_the_best_choice_of_fetch_moments(seed):
    rng = random.Random(seed)
    start, end = 0.0, 8.0
    page = _random_page(rng, start, end)
    curve = page_age_by_fetches(page, start=start, end=end)
    moments = [start] + list(page.changes)
    for k, best in enumerate(curve):
        brute = min(_simulated_age(page, list(c), start=start, end=end) for c in itertools.combinations(moments, k))
        assert best == pytest.approx(brute, abs=0.05)
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(curve))  # a fetch more never hurts


@pytest.mark.parametrize("seed", range(6))
def test_no_fetch_times_beat_the_bound(seed):
    rng = random.Random(100 + seed)
    start, end = 0.0, 6.0
    pages = [_random_page(rng, start, end) for _ in range(4)]
    budget = rng.randint(1, 6)
    floor = bound_mean_staleness(pages, start=start, end=end, fetches=budget)
    for _ in range(40):  # fetches at arbitrary times, spread over the pages in any way
        plan = [[] for _ in pages]
        for _ in range(budget):
            plan[rng.randrange(len(pages))].append(rng.uniform(start, end))
        mean = sum(_simulated_age(p, f, start=start, end=end) for p, f in zip(pages, plan, strict=True))
        assert mean / (len(pages) * (end - start)) >= floor - 0.01


def test_bound_is_the_best_split_of_the_budget():
    rng = random.Random(7)
    start, end = 0.0, 6.0
    pages = [_random_page(rng, start, end) for _ in range(3)]
    curves = [page_age_by_fetches(p, start=start, end=end) for p in pages]
    for budget in range(0, 8):
        brute = min(
            sum(c[k] for c, k in zip(curves, split, strict=True))
            for split in itertools.product(*(range(len(c)) for c in curves))
            if sum(split) <= budget
        )
        assert bound_mean_staleness(pages, start=start, end=end, fetches=budget) == pytest.approx(
            brute / (3 * (end - start))
        )


def test_a_page_that_never_changes_and_is_fresh_costs_nothing():
    assert page_age_by_fetches(PageTimes(None, []), start=0.0, end=10.0) == [0.0, 0.0]
    # Stale since 2 s before the window (∫(t + 2) over [0, 10] = 70), no change: one fetch at the start clears it.
    assert page_age_by_fetches(PageTimes(-2.0, []), start=0.0, end=10.0) == [pytest.approx(70.0), 0.0]
