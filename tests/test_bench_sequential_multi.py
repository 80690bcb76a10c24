"""Seed 001's multi-process sequential baseline (bench/baselines/sequential_multi.py) does its re-checks itself, in the
loader's own time, and its processes share one uniqueness check. Its speed is the benchmark's business."""

from __future__ import annotations

import time
from collections import Counter

from bench.baselines.sequential_multi import Loader, Timings, run
from crawler.http import FetchPolicy
from testweb.paper001 import MixSpec, MixWeb

POLICY = FetchPolicy(connect_timeout=0.3, header_timeout=0.3, body_timeout=1.0, user_agent="crawladmin/test")
FAST = {"latency": 0.01, "first_octet": 244}  # 127.0.0.244..: no other test web lives there


def _loop(loader: Loader, seconds: float) -> list:
    """The loader's sequence with nothing new to load: only its own re-checks, for `seconds`."""
    actions, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded by the deadline
        w = loader.due_recheck(time.monotonic())
        if w is None:
            time.sleep(0.02)
            continue
        actions.append(loader.recheck(w)[0])
    return actions


def test_loader_rechecks_a_url_of_a_site_that_was_down_and_collects_it_when_it_is_back():
    spec = MixSpec(sites=2, pages=3, dead=0, flaky=1, down_windows=((0.0, 1.0),), changing_share=0.0, hour=1.0, **FAST)
    timings = Timings(revisit_after=60.0, nr1_backoff=1.2, nr2_backoff=60.0, robots_retry=0.1)
    with MixWeb(spec) as web:
        flaky, live = web.spec.flaky_hosts[0], web.spec.live_hosts[1]
        loader = Loader(POLICY, timings)
        try:
            assert loader.load(web.model.url(live, "/"), 0)[0].collected  # starts the web's clock
            time.sleep(0.1)  # the toggler takes the flaky site down
            first, _ = loader.load(web.model.url(flaky, "/"), 0)
            assert first.outcome == "failed" and not first.collected
            assert first.waited >= POLICY.connect_timeout * 0.9  # the loader itself waited out the silence
            actions = _loop(loader, 2.5)
        finally:
            loader.close()
    home = web.model.url(flaky, "/")
    rechecks = [a for a in actions if a.url == home]
    assert [(a.kind, a.outcome, a.collected) for a in rechecks] == [("inactive", "changed+reload", True)]
    assert web.hits(flaky, "GET", "/") == 1


def test_loader_reloads_a_changed_page_at_its_active_recheck():
    spec = MixSpec(sites=1, pages=2, dead=0, flaky=0, changing_share=1.0, change_hours=0.5, hour=1.0, **FAST)
    with MixWeb(spec) as web:
        host = web.spec.live_hosts[0]
        loader = Loader(POLICY, Timings(revisit_after=0.6, nr1_backoff=60.0, nr2_backoff=60.0))
        try:
            loader.load(web.model.url(host, "/p/0.html"), 0)
            actions = _loop(loader, 1.0)
        finally:
            loader.close()
    first = actions[0]
    assert (first.kind, first.outcome, first.collected) == ("active", "changed+reload", False)
    assert web.hits(host, "HEAD", "/p/0.html") >= 1 and web.hits(host, "GET", "/p/0.html") >= 2


def test_processes_share_one_uniqueness_check():
    spec = MixSpec(sites=2, pages=10, dead=1, flaky=0, changing_share=0.0, hour=60.0, **FAST)
    with MixWeb(spec) as web:
        report = run(web.seeds(), seconds=4.0, procs=2, policy=POLICY, timings=Timings()).to_json()
        pages = [(h, p) for h in spec.live_hosts for p in ["/", *(f"/p/{k}.html" for k in range(10))]]
        per_page = Counter({page: web.hits(page[0], "GET", page[1]) for page in pages})
    assert len(report["collected"]) == web.model.page_count()
    assert set(per_page.values()) == {1}  # no page loaded twice by two processes
    assert report["actions"]["load"] > report["outcomes"].get("load:visited", 0)  # the dead server's URLs too


def test_extractor_processes_apart_find_every_page_and_every_process_reports_its_cpu():
    spec = MixSpec(sites=2, pages=10, dead=0, flaky=0, changing_share=0.0, hour=60.0, **FAST)
    with MixWeb(spec) as web:
        report = run(
            web.seeds(), seconds=4.0, procs=2, policy=POLICY, timings=Timings(), extractors=2, engine="engine"
        ).to_json()
    assert len(report["collected"]) == web.model.page_count()  # links reached ToLoad only through the extractors
    assert (report["extractors"], report["engine"]) == (2, "engine")
    assert set(report["cpu_seconds"]) == {"loader-1", "loader-2", "extractor-1", "extractor-2", "parent"}
    assert report["cpu_seconds"]["extractor-1"] + report["cpu_seconds"]["extractor-2"] > 0


def test_a_web_behind_the_delay_proxy_adds_its_round_trip_and_a_down_site_stays_silent():
    spec = MixSpec(sites=2, pages=2, dead=0, flaky=1, down_windows=((0.0, 1.0),), changing_share=0.0, hour=2.0, **FAST)
    with MixWeb(spec, rtt_ms=80) as web:
        loader = Loader(POLICY, Timings())
        try:
            live, flaky = web.spec.live_hosts[1], web.spec.flaky_hosts[0]
            started = time.monotonic()
            assert loader.load(web.model.url(live, "/"), 0)[0].collected  # robots.txt and the page: 2 connections
            assert time.monotonic() - started >= 2 * 0.08  # at least a round trip each
            time.sleep(0.1)  # the toggler takes the flaky site and its proxy listener down
            assert loader.load(web.model.url(flaky, "/"), 0)[0].waited >= POLICY.connect_timeout * 0.9
        finally:
            loader.close()
