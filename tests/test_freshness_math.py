"""scheduling.freshness: the staleness of a copy, the percentiles, the budget a target needs, lastmod honesty."""

from __future__ import annotations

import math
import random

import pytest

from scheduling import freshness as fr


def test_expected_staleness_is_zero_after_a_check_and_tends_to_tau_less_the_mean_life():
    assert fr.expected_staleness(0.01, 0) == 0
    assert fr.expected_staleness(0.0, 1000) == 0  # a page that never changes is never stale
    assert fr.expected_staleness(1 / 60, 36_000) == pytest.approx(36_000 - 60, rel=1e-6)
    # small λτ: about λτ²/2 (the copy is stale for the part of τ after the first change)
    assert fr.expected_staleness(1e-9, 100) == pytest.approx(1e-9 * 100 * 100 / 2, rel=1e-3)


def test_expected_staleness_matches_a_simulation_of_poisson_changes():
    rng = random.Random(4)
    rate, tau, n = 1 / 300, 900.0, 40_000
    total = 0.0
    for _ in range(n):
        first = rng.expovariate(rate)
        total += max(0.0, tau - first)
    assert fr.expected_staleness(rate, tau) == pytest.approx(total / n, rel=0.03)


def test_percentile_interpolates_and_is_none_of_nothing():
    assert fr.percentile([], 95) is None
    assert fr.percentile([5.0], 95) == 5.0
    assert fr.percentile(list(range(101)), 95) == 95
    assert fr.percentile([0, 10], 50) == 5


def test_interval_for_keeps_the_chance_of_passing_the_target_within_half_the_five_per_cent():
    rate = 1 / 3600
    interval = fr.interval_for(rate, 1800)
    assert fr.stale_beyond(rate, interval, 1800) == pytest.approx(0.025)
    assert fr.stale_beyond(rate, fr.interval_for(rate, 1800, 95.0), 1800) == pytest.approx(0.05)
    assert fr.interval_for(0.0, 60) == fr.LONGEST_INTERVAL
    pages = [fr.PageState(server=1, rate=rate, since_current=0) for _ in range(20)]
    tight, loose = fr.budget_needed(pages, 600), fr.budget_needed(pages, 7200)
    assert tight > loose > 0


def test_the_reload_lag_moves_the_check_earlier_and_costs_requests():
    # Checked at interval_for(…, lag), a page's chance of being stale by more than the target when its reload
    # comes (lag after the check) is the 2.5 % the schedule aims at; without the lag it would be far more.
    rate, target, lag = 1 / 40, 60.0, 12.0
    early, late = fr.interval_for(rate, target, lag=lag), fr.interval_for(rate, target)
    assert late - early == pytest.approx(lag)
    assert fr.stale_beyond(rate, early + lag, target) == pytest.approx(0.025)
    assert fr.stale_beyond(rate, late + lag, target) > 0.2
    # A target the lag alone passes: checked as often as a sweep can, and the budget says what that costs.
    assert fr.interval_for(rate, 5.0, lag=lag) == fr.SHORTEST_INTERVAL
    slow = [fr.PageState(server=1, rate=rate, since_current=0, lag=lag) for _ in range(5)]
    fast = [fr.PageState(server=1, rate=rate, since_current=0) for _ in range(5)]
    assert fr.budget_needed(slow, target) > fr.budget_needed(fast, target)


def test_staleness_at_detection_matches_a_simulation_of_poisson_changes():
    rng = random.Random(9)
    for rate, interval in ((1 / 40, 61.0), (1 / 600, 60.0), (1 / 5, 60.0)):
        found = [interval - t for t in (rng.expovariate(rate) for _ in range(60_000)) if t < interval]
        assert fr.staleness_at_detection(rate, interval) == pytest.approx(sum(found) / len(found), rel=0.03)
    assert fr.staleness_at_detection(0.0, 30.0) == 15.0


def test_budget_needed_is_the_busiest_servers_sum():
    one = [fr.PageState(server=1, rate=1 / 600, since_current=0) for _ in range(10)]
    two = [fr.PageState(server=2, rate=1 / 600, since_current=0) for _ in range(5)]
    assert fr.budget_needed(one + two, 3600) == fr.budget_needed(one, 3600)
    assert fr.budget_needed(one, 3600) > fr.budget_needed(two, 3600) > 0
    assert fr.budget_needed([], 3600) == 0


def test_the_staleness_quantile_is_that_of_simulated_pages():
    rng = random.Random(60)
    pages = [fr.PageState(server=1, rate=1 / rng.uniform(20, 120), since_current=rng.uniform(0, 200))
             for _ in range(40)]  # fmt: skip
    draws = []
    for _ in range(500):
        for p in pages:
            first_change = rng.expovariate(p.rate)
            draws.append(max(0.0, p.since_current - first_change))
    for q in (50, 95):
        assert fr.staleness_quantile(pages, q) == pytest.approx(fr.percentile(draws, q), rel=0.05, abs=1.0)
    assert fr.staleness_quantile([], 95) is None
    assert fr.staleness_quantile([fr.PageState(1, 1e-9, 10.0)], 95) == 0.0


def test_requests_per_day_counts_the_reload_after_a_change():
    assert fr.requests_per_day(0.0, 3600) == pytest.approx(24)
    assert fr.requests_per_day(1.0, 3600) == pytest.approx(48)


def test_change_rate_is_seed_004s_estimator_with_its_prior():
    prior = 1 / 86_400
    assert fr.change_rate(checks=0, changed=0, watched=0, prior=prior) == pytest.approx(prior)
    n, x, w = 10, 5, 10 * 600.0
    expected = (-math.log((n - x + 0.5) / (n + 0.5)) * n * n / w + prior) / (n + 1)
    assert fr.change_rate(checks=n, changed=x, watched=w, prior=prior) == pytest.approx(expected)
    assert fr.change_rate(checks=10, changed=10, watched=w, prior=prior) > 1 / 600  # more than one a check


@pytest.mark.parametrize(
    ("text", "kind"), [("all", "all"), ("top:1000", "top"), ("^/news/", "regex"), (r"\.html$", "regex")]
)
def test_pages_forms(text, kind):
    assert fr.pages_parse(text).kind == kind
    assert fr.pages_parse(text).text == text


BAD_PAGES = [("top:0", "whole number"), ("top:x", "whole number"), ("(", "not a regular expression"),
             ("", "must be"), (5, "must be")]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD_PAGES)
def test_bad_pages_are_one_line(text, message):
    with pytest.raises(fr.PagesError) as info:
        fr.pages_parse(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_lastmod_honesty_needs_both_precision_and_recall():
    assert fr.lastmod_honesty(announced=0, confirmed=0, found=0, foretold=0) is None
    assert fr.lastmod_honesty(announced=10, confirmed=10, found=10, foretold=10) == 1.0
    liar = fr.lastmod_honesty(announced=100, confirmed=10, found=10, foretold=10)  # "changed now" every time
    assert liar == pytest.approx(0.1) and not fr.lastmod_trusted(liar)
    silent = fr.lastmod_honesty(announced=0, confirmed=0, found=10, foretold=0)
    assert silent == 0.0
    assert fr.lastmod_trusted(None) and fr.lastmod_trusted(0.8)


def test_hours_met_pct():
    assert fr.hours_met_pct([]) is None
    assert fr.hours_met_pct([True, True, False, True]) == 75.0


def test_burn_rates_fast_and_slow_and_the_budget_left():
    met = [True] * 72
    assert not fr.burning(met) and fr.budget_left_pct(met) == 100.0
    fast = [False, False] + [True] * 70  # 2 of the last 6 hours: burn 6.7 in the fast window
    assert fr.burn_rate(fast, fr.FAST_HOURS) == pytest.approx((2 / 6) / 0.05)
    assert fr.burning(fast)
    slow = [True] * 6 + [False] * 8 + [True] * 58  # the fast window holds; 8 of 72 burns the slow one
    assert fr.burn_rate(slow, fr.FAST_HOURS) == 0 and fr.burning(slow)
    assert fr.budget_left_pct([True] * 19 + [False]) == pytest.approx(0.0)
    assert fr.budget_left_pct([]) is None


def test_a_page_known_changed_counts_its_known_staleness():
    fresh = [fr.PageState(server=1, rate=1e-9, since_current=5.0) for _ in range(19)]
    changed = fr.PageState(server=1, rate=1e-9, since_current=5.0, known_stale=120.0)
    assert fr.staleness_quantile(fresh, 99) == 0.0
    assert fr.staleness_quantile([*fresh, changed], 99) == pytest.approx(120.0, abs=0.01)
    assert fr.staleness_of([changed]) == [120.0]


def test_a_page_known_changed_is_stale_by_a_chance_over_the_interval_its_change_came_in():
    """Found changed 10 s ago, 60 s after it was last found current, changing every 30 s on average: its
    staleness is 10 s plus 60 s less the first change's time, exponential and truncated to the 60 s; alone,
    its p95 is where P(T < 70 − s) = 5 %, not its mean."""
    rate, since, within = 1 / 30, 10.0, 60.0
    mean = since + fr.staleness_at_detection(rate, within)
    page = fr.PageState(server=1, rate=rate, since_current=since, known_stale=mean, changed_within=within)

    def quantile(q: float) -> float:  # 1 − e^(−λx) = (1 − q)(1 − e^(−λI)), x = I − (s − since)
        return since + within + math.log(1 - (1 - q / 100) * -math.expm1(-rate * within)) / rate

    assert fr.staleness_quantile([page], 95) == pytest.approx(quantile(95), abs=0.01)
    assert fr.staleness_quantile([page], 1) == pytest.approx(quantile(1), abs=0.01)
    assert since < quantile(1) < since + 2  # hardly ever less stale than when its check found it changed
    assert since < mean < fr.staleness_quantile([page], 50) < fr.staleness_quantile([page], 95) < since + within
    assert fr.changed_beyond(rate, within, -1.0) == 1.0 and fr.changed_beyond(rate, within, within) == 0.0
    assert fr.changed_beyond(1e-12, within, 15.0) == pytest.approx(0.75)  # rare changes: uniform in the interval
    assert fr.staleness_of([page]) == [mean]


def test_an_objectives_p95_is_what_a_reading_of_its_pages_finds_not_the_mixtures():
    """Sixteen pages, a quarter to a third of them stale, one found changed: the p95 over the pages themselves
    (each draw one reading of all sixteen) is, on average, well below the p95 of a page drawn at random (the
    mixture), which the objective reported before (28 % over the web's log in a live crawl)."""
    rng = random.Random(16)
    pages = [fr.PageState(server=1, rate=1 / rng.uniform(60, 240), since_current=rng.uniform(0, 90))
             for _ in range(15)]  # fmt: skip
    changed = fr.PageState(server=1, rate=1 / 30, since_current=10.0, known_stale=40.0, changed_within=60.0)

    def staleness(p: fr.PageState) -> float:
        if p.known_stale is None:
            return max(0.0, p.since_current - rng.expovariate(p.rate))
        while (first := rng.expovariate(p.rate)) > p.changed_within:  # its first change, within the interval
            pass
        return p.since_current + p.changed_within - first

    for q in (50, 95):
        readings = [fr.percentile([staleness(p) for p in [*pages, changed]], q) for _ in range(4000)]
        mean = sum(readings) / len(readings)
        assert fr.pages_quantiles([*pages, changed], (q,))[0] == pytest.approx(mean, rel=0.03, abs=0.5)
    assert fr.staleness_quantile([*pages, changed], 95) > 1.15 * fr.pages_quantiles([*pages, changed], (95,))[0]
    many = pages * (fr.EXACT_PAGES // len(pages))  # exact, and near the mixture's: the two meet as pages grow
    assert fr.pages_quantiles(many, (95,))[0] == pytest.approx(fr.staleness_quantile(many, 95), rel=0.02)
    assert fr.pages_quantiles([], (95,))[0] is None
    assert fr.pages_quantiles([fr.PageState(1, 1e-9, 10.0)], (95,))[0] == pytest.approx(0.0, abs=0.01)
