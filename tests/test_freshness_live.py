"""Freshness objectives against the truth (slow: a real crawl of about eleven minutes, `make test-slow` runs it): the
embedded crawler on a changing web it has not seen (testweb/changing.py, pages changing at random), two sites
under objectives (one its budget can hold, one it cannot) and a third whose sitemap says every page changed
whenever it is read. bench/freshness_live.py runs the crawl and measures; this asserts what the objectives
promise."""

from __future__ import annotations

import argparse

import pytest

from bench.freshness_live import objectives, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def crawl() -> dict:
    # The reported p95 is an expectation, the web's log one draw: sixteen pages checked together make a
    # sawtooth of about a minute, and a page found changed after a long interval weighs one sixteenth of the
    # figure by itself. Over two of those cycles (a 210 s run), the means differed by 20 % and more in one
    # run of six on a busy machine, and in two of three on another seed; over five (420 s), by 6 to 11 % in
    # three runs and by 28 % in a fourth (CI's script on a faster machine, 30 Nov: 32.9 s against 25.6). That
    # one was mostly a bias, not chance: the objective reported the p95 of a page drawn at random, a quarter to
    # two fifths above the p95 of 16 pages when a fifth to a third of them are stale (it now reports the latter,
    # scheduling.freshness.pages_quantiles). Over 630 s one long interval weighs two thirds of what it did.
    return run(argparse.Namespace(seconds=630.0, pages=16, seed=23, periodic=False))


def test_the_reported_p95_is_within_20_per_cent_of_the_webs_log(crawl):
    for name, o in crawl["objectives"].items():
        if name == "liar":
            continue  # its pages hardly change: both figures are near 0, a ratio means nothing
        assert o["samples"] >= 10
        assert abs(o["reported_p95_s"] - o["true_p95_s"]) <= 0.2 * o["true_p95_s"], (name, o)


def test_the_starved_objective_is_shown_unattainable_with_the_budget_it_needs(crawl):
    holdable, starved = crawl["objectives"]["holdable"], crawl["objectives"]["starved"]
    assert holdable["attainable"] and holdable["budget_needed"] <= holdable["budget"], holdable
    assert not starved["attainable"] and starved["budget_needed"] > starved["budget"], starved


def test_the_attainable_objective_holds(crawl):
    holdable = crawl["objectives"]["holdable"]
    assert holdable["held_share"] >= 0.8, holdable


def test_the_liars_lastmod_is_found_out(crawl):
    assert crawl["honesty"]["liar"] is not None and crawl["honesty"]["liar"] < 0.2, crawl["honesty"]
    assert crawl["honesty"]["holdable"] is None or crawl["honesty"]["holdable"] >= 0.5, crawl["honesty"]
    assert crawl["lastmod_ignored"] == {"holdable": False, "starved": False, "liar": True}


def test_no_server_gets_more_requests_than_its_budget(crawl):
    budgets = {o["name"]: o["budget"] for o in objectives(16)}
    for name, r in crawl["requests"].items():
        assert r["received"] <= budgets[name], (name, r)


def test_an_indexnow_push_has_the_page_fetched_again_within_60_s(crawl):
    assert crawl["push"]["status"] == 200
    assert crawl["push"]["fetched_after_s"] is not None and crawl["push"]["fetched_after_s"] <= 60
